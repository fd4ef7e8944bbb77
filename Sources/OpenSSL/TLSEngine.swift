import Glibc

/// What a TLS handshake agreed on: for logs and the metrics of open connections.
///
/// **Ownership:** A value.
/// **Thread safety:** Value type; not shared.
public struct TLSSessionInfo: Equatable, Sendable {
    /// OpenSSL's name of the protocol version: `TLSv1.2` or `TLSv1.3`.
    public var protocolVersion: String
    /// The cipher suite's OpenSSL name (`TLS_AES_128_GCM_SHA256`, `ECDHE-RSA-AES128-GCM-SHA256`).
    public var cipherSuite: String
    /// The protocol agreed through ALPN (`http/1.1`, `h2`), or nil when none was.
    public var applicationProtocol: String?
    /// The host name of SNI: on a server, the one the client asked for; on a client, the one it sent. Nil when none.
    public var serverName: String?
    /// Whether an earlier session was resumed (an abbreviated handshake).
    public var resumed: Bool

    public init(
        protocolVersion: String,
        cipherSuite: String,
        applicationProtocol: String?,
        serverName: String?,
        resumed: Bool
    ) {
        self.protocolVersion = protocolVersion
        self.cipherSuite = cipherSuite
        self.applicationProtocol = applicationProtocol
        self.serverName = serverName
        self.resumed = resumed
    }
}

/// One TLS connection as a state machine without I/O: ciphertext in, plaintext out, plaintext in, ciphertext out.
///
/// It owns an OpenSSL `SSL` between two memory BIOs and never touches a socket. Its owner:
/// 1. reads at most ``inputCapacity`` bytes from the socket and gives them to ``feed(_:)``;
/// 2. calls ``handshake()`` until it is ``HandshakeResult/complete(_:)``, then ``read(into:)`` until it returns
///    ``ReadResult/wantInput`` (plaintext may be waiting already when the handshake completes: read then);
/// 3. gives plaintext to ``write(_:)``, offering again, in order, what it did not take;
/// 4. after **every** call above, sends the ciphertext waiting in ``pendingOutputCount`` (``takeOutput(into:)``),
///    and waits for the socket to be writable while some is left;
/// 5. ends with ``shutdown()`` (a close_notify to send) and closes the socket once that is sent.
///
/// A failure is a value: ``TLSFailure`` with a reason fit for a metrics label. After one, every call returns it
/// again; the output may still hold an alert for the peer, worth sending before closing. Nothing the peer sends
/// can crash the process.
///
/// **Bounded.** The ciphertext not yet decrypted is at most ``Limits/maxBufferedInput`` (``feed(_:)``
/// takes no more; the owner leaves the rest in the kernel). The ciphertext not yet taken stays within
/// ``Limits/maxBufferedOutput`` plus one record: ``write(_:)`` stops encrypting and
/// ``read(into:)`` stops reading (``ReadResult/outputFull``, OpenSSL's want-write) until the owner drains it, so a
/// peer that never reads cannot make either grow. Plaintext goes straight into the owner's buffer.
///
/// **Ownership:** One per connection, owned by it; holds its ``TLSContext`` (the context the connection started
/// with, whatever reloads happen meanwhile). Frees the `SSL` and its BIOs when released.
///
/// **Thread safety:** Not thread-safe: one thread at a time, in practice the connection's event loop. It may be
/// handed to another thread between calls when the handover orders memory (a queue, a lock). OpenSSL's error queue
/// is per thread and each call empties it before and after, so calls on different engines from one thread do not
/// mix their errors.
public final class TLSEngine: @unchecked Sendable {
    // @unchecked Sendable: confined to one thread at a time by its owner (see above); it is Sendable so that an
    // engine made on an accepting thread can be handed to the connection's loop.

    /// The bounds on the ciphertext held.
    ///
    /// **Ownership:** A value.
    /// **Thread safety:** Value type; not shared.
    public struct Limits: Equatable, Sendable {
        /// The most ciphertext received and not yet decrypted; at least one full TLS record (18,437 bytes).
        /// Default 34 KiB.
        public var maxBufferedInput: Int
        /// The ciphertext waiting to be sent beyond which no more is made until the owner drains it (a record more
        /// may be made). Default 64 KiB.
        public var maxBufferedOutput: Int

        public init(maxBufferedInput: Int = 34 * 1024, maxBufferedOutput: Int = 64 * 1024) {
            self.maxBufferedInput = max(Self.maximumRecord, maxBufferedInput)
            self.maxBufferedOutput = max(1, maxBufferedOutput)
        }

        /// The largest TLS record: a 5-byte header and 2^14 + 2,048 bytes (TLS 1.2's bound on a ciphertext).
        static let maximumRecord = 5 + 16384 + 2048
    }

    /// Where the handshake is after ``handshake()``.
    public enum HandshakeResult: Equatable, Sendable {
        /// Send the output, then feed more input: the peer's next flight is needed.
        case wantInput
        /// Send the output first: more than ``Limits/maxBufferedOutput`` is waiting.
        case outputFull
        /// The handshake is done (and stays so: calling again returns this again).
        case complete(TLSSessionInfo)
        /// The handshake failed; send the output (an alert), then close.
        case failed(TLSFailure)
    }

    /// What ``read(into:)`` did.
    public enum ReadResult: Equatable, Sendable {
        /// This many bytes of plaintext are in the buffer (0 only for an empty buffer). Read again.
        case bytes(Int)
        /// No plaintext until more input is fed.
        case wantInput
        /// Send the output first: more than ``Limits/maxBufferedOutput`` is waiting (the peer does not read).
        case outputFull
        /// The peer sent close_notify: no more plaintext will come. Answer with ``shutdown()``.
        case closed
        /// The connection failed; close it.
        case failed(TLSFailure)
    }

    /// What ``write(_:)`` did.
    public enum WriteResult: Equatable, Sendable {
        /// This many bytes (from the front) were encrypted into the output; offer the rest again later.
        case wrote(Int)
        /// The handshake has not completed; nothing was taken.
        case wantInput
        /// Nothing was taken: more than ``Limits/maxBufferedOutput`` is waiting. Send it first.
        case outputFull
        /// The connection failed (or was shut down); close it.
        case failed(TLSFailure)
    }

    /// What ``shutdown()`` did.
    public enum ShutdownResult: Equatable, Sendable {
        /// Our close_notify is in the output; the peer's has not come. Send the output, then close (waiting for
        /// the peer's is optional).
        case sent
        /// Both close_notifys are exchanged: send the output, then close.
        case complete
        /// There is no TLS session to close cleanly (a failure, or a handshake not done): just close.
        case failed(TLSFailure)
    }

    /// The context the engine was made from, kept for its whole life.
    public let context: TLSContext
    /// The limits the engine keeps to.
    public let limits: Limits
    /// What the handshake agreed on, once it completed.
    public private(set) var session: TLSSessionInfo?
    /// The failure that ended the connection, if one did.
    public private(set) var failure: TLSFailure?
    /// Whether the peer's close_notify has been read (a clean end, not a truncation).
    public private(set) var receivedCloseNotify = false
    /// Whether our close_notify has been made (``shutdown()``).
    public private(set) var sentCloseNotify = false

    private let library: LibSSL
    /// `library.crypto`, for the BIO calls of every read and write.
    private let crypto: LibCrypto
    private let ssl: OpaquePointer
    /// The ciphertext from the peer: `SSL_read` and `SSL_do_handshake` read it. Owned by `ssl`.
    private let input: OpaquePointer
    /// The ciphertext for the peer: OpenSSL writes it. Owned by `ssl`.
    private let output: OpaquePointer
    /// The length of an `SSL_write` that asked to be retried: its retry must be at least as long.
    private var retryWriteCount: Int?

    /// The most plaintext given to one `SSL_write`: one record.
    private static let writeChunk = 16384

    init(context: TLSContext, serverName: String?, limits: Limits) throws(TLSError) {
        let library = context.library
        let crypto = library.crypto
        library.clearErrors()
        guard let ssl = library.new(context.context) else {
            throw .configuration("SSL_new failed: \(TLSContext.errorText(library))")
        }
        guard let input = crypto.bioNew(crypto.memoryMethod()) else {
            library.free(ssl)
            throw .configuration("BIO_new failed: \(TLSContext.errorText(library))")
        }
        guard let output = crypto.bioNew(crypto.memoryMethod()) else {
            _ = crypto.bioFree(input)
            library.free(ssl)
            throw .configuration("BIO_new failed: \(TLSContext.errorText(library))")
        }
        library.setBIO(ssl, input, output)  // `ssl` owns both from here
        switch context.role {
        case .server:
            library.setAcceptState(ssl)
        case .client:
            library.setConnectState(ssl)
            let name = serverName ?? ""
            guard !name.isEmpty, !name.utf8.contains(0) else {
                library.free(ssl)
                throw .configuration("a TLS client needs the server's name (got \"\(name)\")")
            }
            // SNI carries host names only, never an address (RFC 6066, 3).
            if !Self.isIPAddress(name) {
                let sniSet = name.withCString {
                    library.control(
                        ssl,
                        LibSSL.Control.setHostName.rawValue,
                        Int(LibSSL.hostNameType),
                        UnsafeMutableRawPointer(mutating: $0)
                    )
                }
                guard sniSet == 1 else {
                    library.free(ssl)
                    throw .configuration(
                        "OpenSSL refused the server name \"\(name)\": \(TLSContext.errorText(library))"
                    )
                }
            }
            guard library.setHost(ssl, name) == 1 else {
                library.free(ssl)
                throw .configuration("OpenSSL refused the host name \"\(name)\": \(TLSContext.errorText(library))")
            }
        }
        self.context = context
        self.limits = limits
        self.library = library
        self.crypto = crypto
        self.ssl = ssl
        self.input = input
        self.output = output
    }

    deinit {
        library.free(ssl)
    }

    // MARK: Ciphertext

    /// How many bytes of ciphertext ``feed(_:)`` takes now: read no more from the socket.
    public var inputCapacity: Int {
        max(0, limits.maxBufferedInput - crypto.bioPending(input))
    }

    /// Takes ciphertext read from the socket, up to ``inputCapacity``; returns how many bytes it took (keep the
    /// rest, or better, read no more than ``inputCapacity``). After a failure it takes and drops everything.
    @discardableResult
    public func feed(_ ciphertext: UnsafeRawBufferPointer) -> Int {
        guard failure == nil else { return ciphertext.count }
        let count = min(ciphertext.count, inputCapacity, Int(Int32.max))
        guard count > 0, let base = ciphertext.baseAddress else { return 0 }
        let written = crypto.bioWrite(input, base, Int32(count))
        return max(0, Int(written))
    }

    /// ``feed(_:)`` for bytes in an array or a slice.
    @discardableResult
    public func feed(_ ciphertext: some Collection<UInt8>) -> Int {
        if let taken = ciphertext.withContiguousStorageIfAvailable({ feed(UnsafeRawBufferPointer($0)) }) {
            return taken
        }
        return Array(ciphertext).withUnsafeBytes { feed($0) }
    }

    /// How many bytes of ciphertext wait to be sent.
    public var pendingOutputCount: Int { crypto.bioPending(output) }

    /// Moves waiting ciphertext into `buffer`; returns how many bytes (0 when none waits).
    public func takeOutput(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        let count = min(buffer.count, Int(Int32.max))
        guard count > 0, let base = buffer.baseAddress, pendingOutputCount > 0 else { return 0 }
        return max(0, Int(crypto.bioRead(output, base, Int32(count))))
    }

    /// Takes up to `maxCount` bytes of waiting ciphertext.
    public func takeOutput(maxCount: Int = .max) -> [UInt8] {
        let count = min(maxCount, pendingOutputCount)
        guard count > 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: count)
        let taken = bytes.withUnsafeMutableBytes { takeOutput(into: $0) }
        bytes.removeLast(count - taken)
        return bytes
    }

    // MARK: Handshake, plaintext, close

    /// Runs the handshake as far as the input allows.
    public func handshake() -> HandshakeResult {
        if let failure { return .failed(failure) }
        if let session { return .complete(session) }
        guard pendingOutputCount < limits.maxBufferedOutput else { return .outputFull }
        library.clearErrors()
        let result = library.doHandshake(ssl)
        if result == 1 {
            library.clearErrors()
            let session = sessionInfo()
            self.session = session
            return .complete(session)
        }
        switch errorCode(result) {
        case .wantRead:
            return .wantInput
        case .wantWrite:
            return .outputFull
        case let code:
            return .failed(fail(code))
        }
    }

    /// Decrypts plaintext into `buffer`. Runs the handshake first when it has not completed (check ``session``).
    public func read(into buffer: UnsafeMutableRawBufferPointer) -> ReadResult {
        if session == nil {
            switch handshake() {
            case .complete: break
            case .wantInput: return .wantInput
            case .outputFull: return .outputFull
            case .failed(let failure): return .failed(failure)
            }
        }
        if let failure { return .failed(failure) }
        if receivedCloseNotify { return .closed }
        guard pendingOutputCount < limits.maxBufferedOutput else { return .outputFull }
        let count = min(buffer.count, Int(Int32.max))
        guard count > 0, let base = buffer.baseAddress else { return .bytes(0) }
        library.clearErrors()
        let result = library.read(ssl, base, Int32(count))
        if result > 0 { return .bytes(Int(result)) }
        switch errorCode(result) {
        case .wantRead:
            return .wantInput
        case .wantWrite:
            return .outputFull
        case .zeroReturn:
            library.clearErrors()
            receivedCloseNotify = true
            return .closed
        case let code:
            return .failed(fail(code))
        }
    }

    /// Encrypts plaintext from the front of `plaintext` into the output, while the output has room. What it does
    /// not take must be offered again first, in order (a write OpenSSL asked to retry must be retried with at
    /// least as many bytes). Runs the handshake first when it has not completed.
    public func write(_ plaintext: UnsafeRawBufferPointer) -> WriteResult {
        if session == nil {
            switch handshake() {
            case .complete: break
            case .wantInput: return .wantInput
            case .outputFull: return .outputFull
            case .failed(let failure): return .failed(failure)
            }
        }
        if let failure { return .failed(failure) }
        guard !sentCloseNotify else {
            return .failed(TLSFailure(reason: .internalError, message: "written after shutdown"))
        }
        guard let base = plaintext.baseAddress, !plaintext.isEmpty else { return .wrote(0) }
        var written = 0
        while written < plaintext.count && pendingOutputCount < limits.maxBufferedOutput {
            let chunk = max(min(plaintext.count - written, Self.writeChunk), retryWriteCount ?? 0)
            library.clearErrors()
            let result = library.write(ssl, base + written, Int32(min(chunk, plaintext.count - written)))
            if result > 0 {
                retryWriteCount = nil
                written += Int(result)
                continue
            }
            switch errorCode(result) {
            case .wantRead, .wantWrite:
                retryWriteCount = chunk
                return written > 0 ? .wrote(written) : .outputFull
            case let code:
                return .failed(fail(code))
            }
        }
        return written > 0 ? .wrote(written) : .outputFull
    }

    /// ``write(_:)`` for bytes in an array or a slice.
    public func write(_ plaintext: some Collection<UInt8>) -> WriteResult {
        if let result = plaintext.withContiguousStorageIfAvailable({ write(UnsafeRawBufferPointer($0)) }) {
            return result
        }
        return Array(plaintext).withUnsafeBytes { write($0) }
    }

    /// Puts a TLS 1.3 KeyUpdate into the output that asks the peer to update its keys too: the peer answers with a
    /// KeyUpdate of its own, made while it reads. False before the handshake completed, on TLS 1.2, or after a
    /// failure (nothing was made). For tests of a peer whose reads make output (a server that requests key
    /// updates of a client that cannot send).
    package func requestKeyUpdate() -> Bool {
        guard failure == nil, session?.protocolVersion == "TLSv1.3" else { return false }
        library.clearErrors()
        guard library.keyUpdate(ssl, LibSSL.keyUpdateRequested) == 1, library.doHandshake(ssl) == 1 else {
            library.clearErrors()
            return false
        }
        return true
    }

    /// Makes our close_notify (once); send the output, then close the socket.
    public func shutdown() -> ShutdownResult {
        if let failure { return .failed(failure) }
        guard session != nil else {
            return .failed(TLSFailure(reason: .protocolError, message: "closed during the handshake"))
        }
        library.clearErrors()
        let result = library.shutdown(ssl)
        sentCloseNotify = true
        if result == 1 {
            library.clearErrors()
            return .complete
        }
        if result == 0 {
            library.clearErrors()
            return .sent
        }
        switch errorCode(result) {
        case .wantRead, .wantWrite:
            library.clearErrors()
            return .sent
        case let code:
            return .failed(fail(code))
        }
    }

    // MARK: Private

    /// `SSL_get_error` for a call's result (before anything else empties the error queue).
    private func errorCode(_ result: Int32) -> LibSSL.ErrorCode {
        LibSSL.ErrorCode(rawValue: library.getError(ssl, result)) ?? .ssl
    }

    /// Records and returns the failure behind `code`, emptying the error queue.
    private func fail(_ code: LibSSL.ErrorCode) -> TLSFailure {
        let errors = library.takeErrors()
        let failure: TLSFailure
        if let errors {
            failure = classify(errorCode: errors.first, message: errors.message)
        } else if code == .syscall || code == .ssl {
            // With memory BIOs there is no system call: only an input that ended mid-record.
            failure = TLSFailure(reason: .protocolError, message: "the connection's input ended unexpectedly")
        } else {
            failure = TLSFailure(reason: .internalError, message: "SSL_get_error returned \(code)")
        }
        self.failure = failure
        return failure
    }

    /// Maps an OpenSSL error code to a ``TLSFailure/Reason``.
    private func classify(errorCode code: UInt, message: String) -> TLSFailure {
        guard LibSSL.library(ofError: code) == LibSSL.sslLibrary else {
            return TLSFailure(reason: .internalError, message: message)
        }
        switch LibSSL.reason(ofError: code) {
        case 134:  // SSL_R_CERTIFICATE_VERIFY_FAILED: the reason is the verification's
            let result = library.verifyResult(ssl)
            let text = crypto.verifyErrorString(result).map { String(cString: $0) } ?? "error \(result)"
            return TLSFailure(reason: Self.verificationReason(result), message: "\(message): \(text)")
        case 155, 156:  // SSL_R_HTTPS_PROXY_REQUEST, SSL_R_HTTP_REQUEST
            return TLSFailure(reason: .plaintextHTTP, message: message)
        case 193:  // SSL_R_NO_SHARED_CIPHER
            return TLSFailure(reason: .noSharedCipher, message: message)
        case 258:  // SSL_R_UNSUPPORTED_PROTOCOL
            return TLSFailure(reason: .unsupportedProtocol, message: message)
        case 1000..<1256:  // SSL_AD_REASON_OFFSET + the alert's number: the peer's alert
            return TLSFailure(reason: .alertReceived, message: message)
        default:
            return TLSFailure(reason: .protocolError, message: message)
        }
    }

    /// `X509_V_ERR_*` to a reason.
    static func verificationReason(_ result: Int) -> TLSFailure.Reason {
        switch result {
        case 9: .certificateNotYetValid  // X509_V_ERR_CERT_NOT_YET_VALID
        case 10: .certificateExpired  // X509_V_ERR_CERT_HAS_EXPIRED
        case 62, 64: .hostnameMismatch  // X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH
        // X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT, _DEPTH_ZERO_SELF_SIGNED_CERT, _SELF_SIGNED_CERT_IN_CHAIN,
        // _UNABLE_TO_GET_ISSUER_CERT_LOCALLY, _UNABLE_TO_VERIFY_LEAF_SIGNATURE
        case 2, 18, 19, 20, 21: .untrustedCertificate
        default: .certificateInvalid
        }
    }

    /// What the handshake agreed on.
    private func sessionInfo() -> TLSSessionInfo {
        var alpnBytes: UnsafePointer<UInt8>?
        var alpnCount: UInt32 = 0
        library.selectedALPN(ssl, &alpnBytes, &alpnCount)
        let alpn = alpnBytes.flatMap { bytes -> String? in
            alpnCount == 0
                ? nil : String(decoding: UnsafeBufferPointer(start: bytes, count: Int(alpnCount)), as: UTF8.self)
        }
        return TLSSessionInfo(
            protocolVersion: library.versionName(ssl).map { String(cString: $0) } ?? "unknown",
            cipherSuite: library.currentCipher(ssl).flatMap { library.cipherName($0) }.map { String(cString: $0) }
                ?? "unknown",
            applicationProtocol: alpn,
            serverName: library.serverName(ssl, LibSSL.hostNameType).map { String(cString: $0) },
            resumed: library.sessionReused(ssl) == 1
        )
    }

    /// Whether `name` is an IPv4 or IPv6 address literal.
    static func isIPAddress(_ name: String) -> Bool {
        var address = in6_addr()
        return inet_pton(AF_INET, name, &address) == 1 || inet_pton(AF_INET6, name, &address) == 1
    }
}
