import Glibc

/// What a server-side ``TLSContext`` is made of.
///
/// **Ownership:** A value.
/// **Thread safety:** Value type; not shared.
public struct TLSServerConfiguration: Equatable, Sendable {
    /// The PEM certificate chain: the server's certificate first, then the intermediates (as cert-manager and
    /// Let's Encrypt write `tls.crt` / `fullchain.pem`).
    public var certificateFile: String
    /// The PEM private key of the certificate (`tls.key`), unencrypted.
    public var privateKeyFile: String
    /// The application protocols offered through ALPN, most preferred first (`["h2", "http/1.1"]` once HTTP/2
    /// exists). A client that offers none of them is still served, without ALPN.
    public var applicationProtocols: [String]
    /// A DER OCSP response for the certificate (what `openssl ocsp -respout` writes), stapled to the handshake of
    /// every client that asks for the certificate's status (`status_request`); nil staples nothing.
    public var ocspResponseFile: String?

    public init(
        certificateFile: String,
        privateKeyFile: String,
        applicationProtocols: [String] = ["http/1.1"],
        ocspResponseFile: String? = nil
    ) {
        self.certificateFile = certificateFile
        self.privateKeyFile = privateKeyFile
        self.applicationProtocols = applicationProtocols
        self.ocspResponseFile = ocspResponseFile
    }
}

/// What a client-side ``TLSContext`` is made of.
///
/// **Ownership:** A value.
/// **Thread safety:** Value type; not shared.
public struct TLSClientConfiguration: Equatable, Sendable {
    /// The CAs a server's certificate must chain to.
    public enum Trust: Equatable, Sendable {
        /// The system's CA store (`/etc/ssl/certs`, or what `SSL_CERT_FILE` / `SSL_CERT_DIR` say).
        case system
        /// Only the PEM certificates of this file (a managed Redis service's CA, a test CA).
        case caFile(String)
    }

    /// The CAs a server's certificate must chain to. Servers are always verified.
    public var trust: Trust
    /// A PEM certificate chain to present when the server asks for one (mutual TLS); nil presents none.
    public var certificateFile: String?
    /// The private key of ``certificateFile``.
    public var privateKeyFile: String?
    /// The application protocols offered through ALPN, most preferred first; empty offers none.
    public var applicationProtocols: [String]

    public init(
        trust: Trust = .system,
        certificateFile: String? = nil,
        privateKeyFile: String? = nil,
        applicationProtocols: [String] = []
    ) {
        self.trust = trust
        self.certificateFile = certificateFile
        self.privateKeyFile = privateKeyFile
        self.applicationProtocols = applicationProtocols
    }
}

/// An OpenSSL `SSL_CTX` set up once, from which every connection's ``TLSEngine`` is made: the certificate and key,
/// the trusted CAs, the protocol versions, the cipher suites and ALPN.
///
/// **Defaults.** TLS 1.2 and 1.3 only; for TLS 1.2 the ECDHE suites of Mozilla's "intermediate" configuration (AES-GCM
/// and ChaCha20-Poly1305, ECDSA or RSA certificates; its DHE suites are left out, which need DH parameters and which
/// every TLS 1.2 client can do without), for TLS 1.3 OpenSSL's three suites; key exchange groups X25519, P-256,
/// P-384; the client picks among the suites (no server preference, as Mozilla advises when every suite is strong);
/// no renegotiation, no compression. Clients verify the server's chain and host name, always.
///
/// **Reload.** A context never changes. To take new certificate files, make a new context (``TLSReloadableContext``
/// does, keeping the old one when the new files are bad); the engines made from the old one keep it until they end.
///
/// **Blocking.** Making a context reads files: do it at start-up or off the event loops. Making an engine does not.
///
/// **Ownership:** Shared: the owner and every engine made from it hold it; the `SSL_CTX` is freed when the last
/// reference goes (OpenSSL counts its own references from each `SSL` too).
///
/// **Thread safety:** Immutable once made; engines may be made from it on any thread at once.
public final class TLSContext: @unchecked Sendable {
    // @unchecked Sendable: `context` is configured in `init` and never changed after; OpenSSL allows SSL_new on a
    // configured SSL_CTX from several threads. `alpn` is immutable.

    /// Which end of connections the context makes.
    public enum Role: Equatable, Sendable {
        case server
        case client
    }

    /// Which end of connections the context makes.
    public let role: Role
    /// The Unix time (seconds) at which the context's own certificate expires (its notAfter); nil for a client
    /// without a certificate. For an expiry metric and alert.
    public let certificateExpiry: Int64?

    let library: LibSSL
    let context: OpaquePointer
    /// The server's ALPN protocols in wire format, handed to the selection callback; kept alive by the context.
    private let alpn: ALPNList?
    /// The OCSP response stapled to handshakes, handed to the status callback; kept alive by the context. Nil
    /// without ``TLSServerConfiguration/ocspResponseFile``.
    private let staple: OCSPStaple?

    /// `SSL_CTX_set_cipher_list`: Mozilla intermediate's ECDHE suites (TLS 1.2).
    static let tls12CipherSuites =
        "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
        + "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"
    /// `SSL_CTX_set_ciphersuites` (TLS 1.3).
    static let tls13CipherSuites = "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256"
    /// Every cipher suite a context may agree on (TLS 1.2's, then TLS 1.3's), by OpenSSL name: the bounded set
    /// ``TLSSessionInfo/cipherSuite`` belongs to, for metric labels.
    public static let offeredCipherSuites: [String] = (tls12CipherSuites + ":" + tls13CipherSuites).split(
        separator: ":"
    ).map(String.init)
    /// `SSL_CTX_set1_groups_list`.
    static let groups = "X25519:prime256v1:secp384r1"

    /// Whether OpenSSL 3 loaded; the error says why not. A service configured for TLS calls this at start-up and
    /// refuses to start on an error.
    public static func checkLibrary() throws(TLSError) {
        _ = try LibSSL.shared.get()
    }

    /// ``checkLibrary()`` with other library names, for tests of a machine without OpenSSL 3.
    package static func checkLibrary(ssl: [String], crypto: [String]) throws(TLSError) {
        _ = try LibSSL.load(ssl: ssl, crypto: crypto).get()
    }

    /// A server context from a certificate chain and its private key.
    ///
    /// - Throws: ``TLSError/libraryUnavailable(_:)`` without OpenSSL 3; ``TLSError/certificateFile(path:reason:)`` or
    ///   ``TLSError/privateKeyFile(path:reason:)`` naming the file and OpenSSL's reason (missing, not PEM, a key that
    ///   does not match the certificate).
    public convenience init(server configuration: TLSServerConfiguration) throws(TLSError) {
        let library = try LibSSL.shared.get()
        let alpn = try ALPNList(configuration.applicationProtocols)
        let staple = try configuration.ocspResponseFile.map { path throws(TLSError) in
            try OCSPStaple(library: library, path: path)
        }
        try self.init(library: library, role: .server, alpn: alpn.isEmpty ? nil : alpn, staple: staple) {
            context throws(TLSError) in
            try TLSContext.useCertificate(
                library,
                context,
                certificateFile: configuration.certificateFile,
                privateKeyFile: configuration.privateKeyFile
            )
        }
    }

    /// A client context: the CAs to trust, an optional client certificate, ALPN.
    ///
    /// - Throws: ``TLSError/libraryUnavailable(_:)`` without OpenSSL 3; ``TLSError/caFile(path:reason:)``,
    ///   ``TLSError/systemTrustStore(reason:)``, or a certificate or key file error.
    public convenience init(client configuration: TLSClientConfiguration) throws(TLSError) {
        let library = try LibSSL.shared.get()
        let alpn = try ALPNList(configuration.applicationProtocols)
        try self.init(library: library, role: .client, alpn: nil, staple: nil) { context throws(TLSError) in
            switch configuration.trust {
            case .system:
                library.clearErrors()
                guard library.contextSetDefaultVerifyPaths(context) == 1 else {
                    throw .systemTrustStore(reason: TLSContext.errorText(library))
                }
            case .caFile(let path):
                library.clearErrors()
                guard library.contextLoadVerifyLocations(context, path, nil) == 1 else {
                    throw .caFile(path: path, reason: TLSContext.errorText(library))
                }
            }
            library.contextSetVerify(context, LibSSL.verifyPeer, nil)
            switch (configuration.certificateFile, configuration.privateKeyFile) {
            case (let certificate?, let key?):
                try TLSContext.useCertificate(library, context, certificateFile: certificate, privateKeyFile: key)
            case (nil, nil):
                break
            case (let certificate?, nil):
                throw .privateKeyFile(path: "", reason: "a client certificate (\(certificate)) needs its private key")
            case (nil, let key?):
                throw .certificateFile(path: "", reason: "a client private key (\(key)) needs its certificate")
            }
            if !alpn.isEmpty {
                // 0 is success for this one.
                let status = alpn.wire.withUnsafeBufferPointer {
                    library.contextSetALPNProtocols(context, $0.baseAddress, UInt32($0.count))
                }
                guard status == 0 else { throw .configuration("OpenSSL refused the ALPN protocol list") }
            }
        }
    }

    /// Makes the `SSL_CTX` with the defaults both roles share, then lets `configure` add the role's settings.
    private init(
        library: LibSSL,
        role: Role,
        alpn: ALPNList?,
        staple: OCSPStaple?,
        configure: (OpaquePointer) throws(TLSError) -> Void
    ) throws(TLSError) {
        library.clearErrors()
        guard let method = role == .server ? library.serverMethod() : library.clientMethod(),
            let context = library.contextNew(method)
        else {
            throw .configuration("SSL_CTX_new failed: \(Self.errorText(library))")
        }
        do throws(TLSError) {
            guard
                library.contextControl(
                    context,
                    LibSSL.Control.setMinimumProtocolVersion.rawValue,
                    LibSSL.tls12Version,
                    nil
                ) == 1,
                library.contextControl(
                    context,
                    LibSSL.Control.setMaximumProtocolVersion.rawValue,
                    LibSSL.tls13Version,
                    nil
                ) == 1
            else {
                throw TLSError.configuration("OpenSSL refused TLS 1.2–1.3: \(Self.errorText(library))")
            }
            _ = library.contextSetOptions(context, LibSSL.options)
            _ = library.contextControl(context, LibSSL.Control.mode.rawValue, LibSSL.modes, nil)
            guard library.contextSetCipherList(context, Self.tls12CipherSuites) == 1,
                library.contextSetCipherSuites(context, Self.tls13CipherSuites) == 1
            else {
                throw TLSError.configuration("OpenSSL refused the cipher suites: \(Self.errorText(library))")
            }
            let groupsSet = Self.groups.withCString {
                library.contextControl(
                    context,
                    LibSSL.Control.setGroupsList.rawValue,
                    0,
                    UnsafeMutableRawPointer(mutating: $0)
                )
            }
            guard groupsSet == 1 else {
                throw TLSError.configuration("OpenSSL refused the groups \(Self.groups): \(Self.errorText(library))")
            }
            try configure(context)
            if let alpn {
                library.contextSetALPNSelectCallback(
                    context,
                    alpnSelect,
                    Unmanaged.passUnretained(alpn).toOpaque()
                )
            }
            if let staple {
                _ = library.contextControl(
                    context,
                    LibSSL.Control.setStatusCallbackArgument.rawValue,
                    0,
                    Unmanaged.passUnretained(staple).toOpaque()
                )
                guard
                    library.contextCallbackControl(context, LibSSL.Control.setStatusCallback.rawValue, stapleOCSP)
                        == 1
                else {
                    throw TLSError.configuration("OpenSSL refused the OCSP status callback")
                }
            }
        } catch {
            library.contextFree(context)
            throw error
        }
        self.library = library
        self.role = role
        self.context = context
        self.alpn = alpn
        self.staple = staple
        self.certificateExpiry = library.contextCertificate(context).flatMap { library.crypto.notAfterUnixTime(of: $0) }
    }

    deinit {
        library.contextFree(context)
    }

    /// An engine for one accepted connection. Throws only when OpenSSL cannot allocate.
    public func makeServerEngine(limits: TLSEngine.Limits = TLSEngine.Limits()) throws(TLSError) -> TLSEngine {
        precondition(role == .server, "makeServerEngine on a client context")
        return try TLSEngine(context: self, serverName: nil, limits: limits)
    }

    /// An engine for one connection to `serverName`: the name sent as SNI (unless it is an IP address) and the one
    /// the server's certificate must be for (a DNS name, or an IP address in its subjectAltName).
    ///
    /// - Throws: ``TLSError/configuration(_:)`` when OpenSSL refuses the name or cannot allocate.
    public func makeClientEngine(
        serverName: String,
        limits: TLSEngine.Limits = TLSEngine.Limits()
    ) throws(TLSError) -> TLSEngine {
        precondition(role == .client, "makeClientEngine on a server context")
        return try TLSEngine(context: self, serverName: serverName, limits: limits)
    }

    /// Loads a certificate chain and its key into `context`, and checks that they match.
    private static func useCertificate(
        _ library: LibSSL,
        _ context: OpaquePointer,
        certificateFile: String,
        privateKeyFile: String
    ) throws(TLSError) {
        library.clearErrors()
        guard library.contextUseCertificateChainFile(context, certificateFile) == 1 else {
            throw .certificateFile(path: certificateFile, reason: errorText(library))
        }
        library.clearErrors()
        guard library.contextUsePrivateKeyFile(context, privateKeyFile, LibSSL.fileTypePEM) == 1 else {
            throw .privateKeyFile(path: privateKeyFile, reason: errorText(library))
        }
        library.clearErrors()
        guard library.contextCheckPrivateKey(context) == 1 else {
            throw .privateKeyFile(
                path: privateKeyFile,
                reason: "does not match the certificate of \(certificateFile) (\(errorText(library)))"
            )
        }
    }

    /// The thread's OpenSSL errors as text, emptying the queue; a generic text when it is empty.
    static func errorText(_ library: LibSSL) -> String {
        library.takeErrors()?.message ?? "OpenSSL reported no reason"
    }
}

/// ALPN protocol names in TLS wire format (each name preceded by its length), for the server's selection callback
/// and the client's offer.
///
/// **Ownership:** Held by its ``TLSContext``, which passes it unretained to OpenSSL's callback.
/// **Thread safety:** Immutable.
final class ALPNList: @unchecked Sendable {
    // @unchecked Sendable: immutable after init.
    let wire: [UInt8]
    /// The names, most preferred first, as bytes.
    let names: [[UInt8]]

    var isEmpty: Bool { names.isEmpty }

    init(_ protocols: [String]) throws(TLSError) {
        var wire: [UInt8] = []
        var names: [[UInt8]] = []
        for name in protocols {
            let bytes = Array(name.utf8)
            guard (1...255).contains(bytes.count) else {
                throw .configuration("an ALPN protocol name must be 1 to 255 bytes: \"\(name)\"")
            }
            wire.append(UInt8(bytes.count))
            wire.append(contentsOf: bytes)
            names.append(bytes)
        }
        self.wire = wire
        self.names = names
    }

    /// The offset and length, in the client's wire-format list, of the first of our names the client offers, or
    /// nil when it offers none of them or its list is malformed.
    func select(from offered: UnsafeBufferPointer<UInt8>) -> (offset: Int, count: Int)? {
        for name in names {
            var index = 0
            while index < offered.count {
                let count = Int(offered[index])
                let start = index + 1
                guard count > 0, start + count <= offered.count else { return nil }
                if count == name.count && name.elementsEqual(offered[start..<(start + count)]) {
                    return (start, count)
                }
                index = start + count
            }
        }
        return nil
    }
}

/// `SSL_CTX_alpn_select_cb_func`: picks our most preferred protocol the client offers; without one, the handshake
/// goes on without ALPN (`SSL_TLSEXT_ERR_NOACK`), as most servers do.
private let alpnSelect: LibSSL.ALPNSelectCallback = { _, out, outCount, input, inputCount, argument in
    guard let out, let outCount, let input, let argument else { return LibSSL.extensionNoAck }
    let list = Unmanaged<ALPNList>.fromOpaque(argument).takeUnretainedValue()
    guard let (offset, count) = list.select(from: UnsafeBufferPointer(start: input, count: Int(inputCount))) else {
        return LibSSL.extensionNoAck
    }
    // Points into the client's list, which OpenSSL keeps until the callback's answer is copied.
    out.pointee = input + offset
    outCount.pointee = UInt8(count)
    return LibSSL.extensionOK
}

/// A DER OCSP response read from a file and checked (it parses, and its status is `successful`), which the status
/// callback staples to a handshake.
///
/// What is checked is the response's form, not that it is for the served certificate nor that it is still fresh:
/// the tool that fetches it from the CA's responder (and writes the file, as `openssl ocsp -respout` does) vouches for
/// those, as nginx's `ssl_stapling_file` leaves them to it.
///
/// **Ownership:** Held by its ``TLSContext``, which passes it unretained to OpenSSL's status callback.
/// **Thread safety:** Immutable; the callback only reads it (from any loop's thread).
final class OCSPStaple: @unchecked Sendable {
    // @unchecked Sendable: immutable after init.

    /// The response, as the file holds it.
    let der: [UInt8]
    let library: LibSSL

    /// The most a response file may hold: a response is a few KiB (a signature, a certificate or two).
    static let maximumBytes = 64 * 1024

    /// Reads and checks `path`. Blocking (reads a file): at start-up or on a reload, off the event loops.
    ///
    /// - Throws: ``TLSError/ocspResponseFile(path:reason:)``: missing, empty, too large, not DER OCSP, or a status
    ///   other than `successful`.
    init(library: LibSSL, path: String) throws(TLSError) {
        let der = try Self.read(path)
        let crypto = library.crypto
        crypto.clearErrors()
        let parsed = der.withUnsafeBufferPointer { buffer -> (response: OpaquePointer?, consumed: Int) in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            let response = crypto.d2iOCSPResponse(nil, &cursor, buffer.count)
            return (response, cursor.map { $0 - buffer.baseAddress! } ?? 0)
        }
        guard let response = parsed.response else {
            throw .ocspResponseFile(path: path, reason: "not a DER OCSP response (\(TLSContext.errorText(library)))")
        }
        let status = crypto.ocspResponseStatus(response)
        crypto.freeOCSPResponse(response)
        guard parsed.consumed == der.count else {
            throw .ocspResponseFile(path: path, reason: "bytes after the DER OCSP response")
        }
        guard status == 0 else {  // OCSP_RESPONSE_STATUS_SUCCESSFUL
            throw .ocspResponseFile(
                path: path,
                reason: "the responder's status is \(Self.statusName(status)), not successful"
            )
        }
        self.der = der
        self.library = library
    }

    /// The whole file, or why not.
    private static func read(_ path: String) throws(TLSError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .ocspResponseFile(path: path, reason: String(cString: strerror(errno))) }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw .ocspResponseFile(path: path, reason: String(cString: strerror(errno)))
            }
            if count == 0 { break }
            bytes.append(contentsOf: chunk[0..<count])
            if bytes.count > maximumBytes {
                throw .ocspResponseFile(path: path, reason: "larger than \(maximumBytes) bytes")
            }
        }
        guard !bytes.isEmpty else { throw .ocspResponseFile(path: path, reason: "empty") }
        return bytes
    }

    /// RFC 6960's name of an `OCSPResponseStatus`.
    static func statusName(_ status: Int32) -> String {
        switch status {
        case 1: "malformedRequest"
        case 2: "internalError"
        case 3: "tryLater"
        case 5: "sigRequired"
        case 6: "unauthorized"
        default: "\(status)"
        }
    }
}

/// `SSL_CTX_set_tlsext_status_cb`'s callback on a server: the client asked for the certificate's status; hands
/// OpenSSL a copy of the response (it frees it), or staples nothing when the copy cannot be made.
private let stapleOCSP: LibSSL.StatusCallback = { ssl, argument in
    guard let ssl, let argument else { return LibSSL.extensionNoAck }
    let staple = Unmanaged<OCSPStaple>.fromOpaque(argument).takeUnretainedValue()
    let library = staple.library
    guard let copy = library.crypto.malloc(staple.der.count, nil, 0) else { return LibSSL.extensionNoAck }
    staple.der.withUnsafeBytes { copy.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
    _ = library.control(ssl, LibSSL.Control.setOCSPResponse.rawValue, staple.der.count, copy)
    return LibSSL.extensionOK
}

/// Contexts are equal when they are the same context: a context is made from files read once, and two made from the
/// same files are still two (a reload makes a new one). So a configuration value that holds one can stay
/// `Equatable`.
extension TLSContext: Equatable {
    public static func == (left: TLSContext, right: TLSContext) -> Bool { left === right }
}
