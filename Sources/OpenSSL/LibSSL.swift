import Glibc

/// The parts of OpenSSL 3's `libssl.so.3` that ``TLSContext`` and ``TLSEngine`` use, with the few `libcrypto.so.3`
/// functions TLS needs (memory BIOs, the error queue, a certificate's expiry), loaded at run time with
/// ``SharedLibrary``.
///
/// **Why its own libcrypto symbols.** The token verification (`LibCrypto`) loads `libcrypto.so.3` for itself; the
/// handful of libcrypto functions TLS needs are looked up again here, in this type, so the two bindings do not
/// depend on each other's lists (`dlopen` of the same library returns the same handle: nothing is loaded twice).
///
/// **Macros.** What `ssl.h` defines as macros (`SSL_CTX_set_min_proto_version`, `SSL_CTX_set_mode`,
/// `SSL_CTX_set1_groups_list`, `SSL_set_tlsext_host_name`) are calls of `SSL_CTX_ctrl` or `SSL_ctrl` with the
/// command numbers of `ssl.h`, in ``Control``. Each function's C prototype is in a comment beside its Swift type.
///
/// **ABI.** Pointers to OpenSSL's opaque structures are `OpaquePointer`s; `long` and `size_t` are `Int` (LP64, which
/// ``SharedLibrary`` checks); `uint64_t` is `UInt64`; `unsigned long` is `UInt`.
///
/// **Ownership:** one process-wide instance (``shared``); the libraries are never closed.
///
/// **Thread safety:** immutable; the functions are OpenSSL's, which is thread-safe for distinct `SSL` objects and
/// for an `SSL_CTX` shared once configured. OpenSSL's error queue is per thread.
final class LibSSL: @unchecked Sendable {
    // @unchecked Sendable: every stored property is an immutable C function pointer.

    // MARK: libssl: contexts

    /// `const SSL_METHOD *TLS_server_method(void);`
    let serverMethod: @convention(c) () -> OpaquePointer?
    /// `const SSL_METHOD *TLS_client_method(void);`
    let clientMethod: @convention(c) () -> OpaquePointer?
    /// `SSL_CTX *SSL_CTX_new(const SSL_METHOD *method);`
    let contextNew: @convention(c) (OpaquePointer?) -> OpaquePointer?
    /// `void SSL_CTX_free(SSL_CTX *ctx);`
    let contextFree: @convention(c) (OpaquePointer?) -> Void
    /// `long SSL_CTX_ctrl(SSL_CTX *ctx, int cmd, long larg, void *parg);`
    let contextControl: @convention(c) (OpaquePointer?, Int32, Int, UnsafeMutableRawPointer?) -> Int
    /// `uint64_t SSL_CTX_set_options(SSL_CTX *ctx, uint64_t op);` (a function since OpenSSL 3.0)
    let contextSetOptions: @convention(c) (OpaquePointer?, UInt64) -> UInt64
    /// `int SSL_CTX_set_cipher_list(SSL_CTX *ctx, const char *str);` (TLS 1.2 and below)
    let contextSetCipherList: @convention(c) (OpaquePointer?, UnsafePointer<CChar>?) -> Int32
    /// `int SSL_CTX_set_ciphersuites(SSL_CTX *ctx, const char *str);` (TLS 1.3)
    let contextSetCipherSuites: @convention(c) (OpaquePointer?, UnsafePointer<CChar>?) -> Int32
    /// `int SSL_CTX_use_certificate_chain_file(SSL_CTX *ctx, const char *file);`
    let contextUseCertificateChainFile: @convention(c) (OpaquePointer?, UnsafePointer<CChar>?) -> Int32
    /// `int SSL_CTX_use_PrivateKey_file(SSL_CTX *ctx, const char *file, int type);`
    let contextUsePrivateKeyFile: @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, Int32) -> Int32
    /// `int SSL_CTX_check_private_key(const SSL_CTX *ctx);`
    let contextCheckPrivateKey: @convention(c) (OpaquePointer?) -> Int32
    /// `int SSL_CTX_load_verify_locations(SSL_CTX *ctx, const char *CAfile, const char *CApath);`
    let contextLoadVerifyLocations:
        @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, UnsafePointer<CChar>?) -> Int32
    /// `int SSL_CTX_set_default_verify_paths(SSL_CTX *ctx);`
    let contextSetDefaultVerifyPaths: @convention(c) (OpaquePointer?) -> Int32
    /// `void SSL_CTX_set_verify(SSL_CTX *ctx, int mode, SSL_verify_cb verify_callback);` (no callback is passed)
    let contextSetVerify: @convention(c) (OpaquePointer?, Int32, UnsafeRawPointer?) -> Void
    /// `void SSL_CTX_set_alpn_select_cb(SSL_CTX *ctx, SSL_CTX_alpn_select_cb_func cb, void *arg);`
    let contextSetALPNSelectCallback:
        @convention(c) (OpaquePointer?, ALPNSelectCallback?, UnsafeMutableRawPointer?) -> Void
    /// `int SSL_CTX_set_alpn_protos(SSL_CTX *ctx, const unsigned char *protos, unsigned int protos_len);` (0 is
    /// success)
    let contextSetALPNProtocols: @convention(c) (OpaquePointer?, UnsafePointer<UInt8>?, UInt32) -> Int32
    /// `X509 *SSL_CTX_get0_certificate(const SSL_CTX *ctx);` (not owned by the caller)
    let contextCertificate: @convention(c) (OpaquePointer?) -> OpaquePointer?

    /// `int (*SSL_CTX_alpn_select_cb_func)(SSL *ssl, const unsigned char **out, unsigned char *outlen,
    /// const unsigned char *in, unsigned int inlen, void *arg);`
    typealias ALPNSelectCallback =
        @convention(c) (
            OpaquePointer?, UnsafeMutablePointer<UnsafePointer<UInt8>?>?, UnsafeMutablePointer<UInt8>?,
            UnsafePointer<UInt8>?, UInt32, UnsafeMutableRawPointer?
        ) -> Int32

    // MARK: libssl: connections

    /// `SSL *SSL_new(SSL_CTX *ctx);`
    let new: @convention(c) (OpaquePointer?) -> OpaquePointer?
    /// `void SSL_free(SSL *ssl);`
    let free: @convention(c) (OpaquePointer?) -> Void
    /// `void SSL_set_bio(SSL *s, BIO *rbio, BIO *wbio);` (takes ownership of both)
    let setBIO: @convention(c) (OpaquePointer?, OpaquePointer?, OpaquePointer?) -> Void
    /// `void SSL_set_accept_state(SSL *s);`
    let setAcceptState: @convention(c) (OpaquePointer?) -> Void
    /// `void SSL_set_connect_state(SSL *s);`
    let setConnectState: @convention(c) (OpaquePointer?) -> Void
    /// `int SSL_do_handshake(SSL *s);`
    let doHandshake: @convention(c) (OpaquePointer?) -> Int32
    /// `int SSL_read(SSL *ssl, void *buf, int num);`
    let read: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, Int32) -> Int32
    /// `int SSL_write(SSL *ssl, const void *buf, int num);`
    let write: @convention(c) (OpaquePointer?, UnsafeRawPointer?, Int32) -> Int32
    /// `int SSL_get_error(const SSL *s, int ret_code);`
    let getError: @convention(c) (OpaquePointer?, Int32) -> Int32
    /// `int SSL_shutdown(SSL *s);`
    let shutdown: @convention(c) (OpaquePointer?) -> Int32
    /// `int SSL_get_shutdown(const SSL *s);`
    let getShutdown: @convention(c) (OpaquePointer?) -> Int32
    /// `long SSL_ctrl(SSL *ssl, int cmd, long larg, void *parg);`
    let control: @convention(c) (OpaquePointer?, Int32, Int, UnsafeMutableRawPointer?) -> Int
    /// `int SSL_set1_host(SSL *s, const char *hostname);`
    let setHost: @convention(c) (OpaquePointer?, UnsafePointer<CChar>?) -> Int32
    /// `const char *SSL_get_servername(const SSL *s, const int type);`
    let serverName: @convention(c) (OpaquePointer?, Int32) -> UnsafePointer<CChar>?
    /// `long SSL_get_verify_result(const SSL *ssl);`
    let verifyResult: @convention(c) (OpaquePointer?) -> Int
    /// `int SSL_version(const SSL *s);`
    let version: @convention(c) (OpaquePointer?) -> Int32
    /// `const char *SSL_get_version(const SSL *s);`
    let versionName: @convention(c) (OpaquePointer?) -> UnsafePointer<CChar>?
    /// `const SSL_CIPHER *SSL_get_current_cipher(const SSL *s);`
    let currentCipher: @convention(c) (OpaquePointer?) -> OpaquePointer?
    /// `const char *SSL_CIPHER_get_name(const SSL_CIPHER *c);`
    let cipherName: @convention(c) (OpaquePointer?) -> UnsafePointer<CChar>?
    /// `void SSL_get0_alpn_selected(const SSL *ssl, const unsigned char **data, unsigned int *len);`
    let selectedALPN:
        @convention(c) (OpaquePointer?, UnsafeMutablePointer<UnsafePointer<UInt8>?>?, UnsafeMutablePointer<UInt32>?) ->
            Void
    /// `int SSL_session_reused(const SSL *s);`
    let sessionReused: @convention(c) (OpaquePointer?) -> Int32

    // MARK: libcrypto: memory BIOs

    /// `const BIO_METHOD *BIO_s_mem(void);`
    let memoryMethod: @convention(c) () -> OpaquePointer?
    /// `BIO *BIO_new(const BIO_METHOD *type);`
    let bioNew: @convention(c) (OpaquePointer?) -> OpaquePointer?
    /// `int BIO_free(BIO *a);`
    let bioFree: @convention(c) (OpaquePointer?) -> Int32
    /// `int BIO_read(BIO *b, void *data, int dlen);`
    let bioRead: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, Int32) -> Int32
    /// `int BIO_write(BIO *b, const void *data, int dlen);`
    let bioWrite: @convention(c) (OpaquePointer?, UnsafeRawPointer?, Int32) -> Int32
    /// `size_t BIO_ctrl_pending(BIO *b);`
    let bioPending: @convention(c) (OpaquePointer?) -> Int

    // MARK: libcrypto: errors and certificates

    /// `unsigned long ERR_get_error(void);`
    let errorGet: @convention(c) () -> UInt
    /// `void ERR_clear_error(void);`
    let errorClear: @convention(c) () -> Void
    /// `const char *ERR_reason_error_string(unsigned long e);`
    let errorReason: @convention(c) (UInt) -> UnsafePointer<CChar>?
    /// `void ERR_error_string_n(unsigned long e, char *buf, size_t len);`
    let errorString: @convention(c) (UInt, UnsafeMutablePointer<CChar>?, Int) -> Void
    /// `const char *X509_verify_cert_error_string(long n);`
    let verifyErrorString: @convention(c) (Int) -> UnsafePointer<CChar>?
    /// `const ASN1_TIME *X509_get0_notAfter(const X509 *x);`
    let notAfter: @convention(c) (OpaquePointer?) -> OpaquePointer?
    /// `int ASN1_TIME_to_tm(const ASN1_TIME *s, struct tm *tm);`
    let timeToTM: @convention(c) (OpaquePointer?, UnsafeMutablePointer<tm>?) -> Int32

    /// The loaded libraries, or why they did not load.
    static let shared = load(ssl: ["libssl.so.3"], crypto: ["libcrypto.so.3"])

    /// Opens the first of `ssl` and of `crypto` that loads and looks up every function; the error names the
    /// library that is missing or the first function it lacks.
    static func load(ssl sslNames: [String], crypto cryptoNames: [String]) -> Result<LibSSL, TLSError> {
        guard let crypto = SharedLibrary(cryptoNames) else {
            return .failure(
                .libraryUnavailable("\(cryptoNames.joined(separator: ", ")) (OpenSSL 3) could not be loaded")
            )
        }
        guard let ssl = SharedLibrary(sslNames) else {
            return .failure(.libraryUnavailable("\(sslNames.joined(separator: ", ")) (OpenSSL 3) could not be loaded"))
        }
        do throws(TLSError) {
            return .success(try LibSSL(ssl: ssl, crypto: crypto))
        } catch {
            return .failure(error)
        }
    }

    /// Looks up every function, failing with the name of the first one missing.
    init(ssl: SharedLibrary, crypto: SharedLibrary) throws(TLSError) {
        func lookUp<F>(_ library: SharedLibrary, _ name: String, as type: F.Type = F.self) throws(TLSError) -> F {
            guard let function = library.function(name, as: type) else {
                throw .libraryUnavailable("OpenSSL 3 lacks \(name)")
            }
            return function
        }
        serverMethod = try lookUp(ssl, "TLS_server_method")
        clientMethod = try lookUp(ssl, "TLS_client_method")
        contextNew = try lookUp(ssl, "SSL_CTX_new")
        contextFree = try lookUp(ssl, "SSL_CTX_free")
        contextControl = try lookUp(ssl, "SSL_CTX_ctrl")
        contextSetOptions = try lookUp(ssl, "SSL_CTX_set_options")
        contextSetCipherList = try lookUp(ssl, "SSL_CTX_set_cipher_list")
        contextSetCipherSuites = try lookUp(ssl, "SSL_CTX_set_ciphersuites")
        contextUseCertificateChainFile = try lookUp(ssl, "SSL_CTX_use_certificate_chain_file")
        contextUsePrivateKeyFile = try lookUp(ssl, "SSL_CTX_use_PrivateKey_file")
        contextCheckPrivateKey = try lookUp(ssl, "SSL_CTX_check_private_key")
        contextLoadVerifyLocations = try lookUp(ssl, "SSL_CTX_load_verify_locations")
        contextSetDefaultVerifyPaths = try lookUp(ssl, "SSL_CTX_set_default_verify_paths")
        contextSetVerify = try lookUp(ssl, "SSL_CTX_set_verify")
        contextSetALPNSelectCallback = try lookUp(ssl, "SSL_CTX_set_alpn_select_cb")
        contextSetALPNProtocols = try lookUp(ssl, "SSL_CTX_set_alpn_protos")
        contextCertificate = try lookUp(ssl, "SSL_CTX_get0_certificate")
        new = try lookUp(ssl, "SSL_new")
        free = try lookUp(ssl, "SSL_free")
        setBIO = try lookUp(ssl, "SSL_set_bio")
        setAcceptState = try lookUp(ssl, "SSL_set_accept_state")
        setConnectState = try lookUp(ssl, "SSL_set_connect_state")
        doHandshake = try lookUp(ssl, "SSL_do_handshake")
        read = try lookUp(ssl, "SSL_read")
        write = try lookUp(ssl, "SSL_write")
        getError = try lookUp(ssl, "SSL_get_error")
        shutdown = try lookUp(ssl, "SSL_shutdown")
        getShutdown = try lookUp(ssl, "SSL_get_shutdown")
        control = try lookUp(ssl, "SSL_ctrl")
        setHost = try lookUp(ssl, "SSL_set1_host")
        serverName = try lookUp(ssl, "SSL_get_servername")
        verifyResult = try lookUp(ssl, "SSL_get_verify_result")
        version = try lookUp(ssl, "SSL_version")
        versionName = try lookUp(ssl, "SSL_get_version")
        currentCipher = try lookUp(ssl, "SSL_get_current_cipher")
        cipherName = try lookUp(ssl, "SSL_CIPHER_get_name")
        selectedALPN = try lookUp(ssl, "SSL_get0_alpn_selected")
        sessionReused = try lookUp(ssl, "SSL_session_reused")
        memoryMethod = try lookUp(crypto, "BIO_s_mem")
        bioNew = try lookUp(crypto, "BIO_new")
        bioFree = try lookUp(crypto, "BIO_free")
        bioRead = try lookUp(crypto, "BIO_read")
        bioWrite = try lookUp(crypto, "BIO_write")
        bioPending = try lookUp(crypto, "BIO_ctrl_pending")
        errorGet = try lookUp(crypto, "ERR_get_error")
        errorClear = try lookUp(crypto, "ERR_clear_error")
        errorReason = try lookUp(crypto, "ERR_reason_error_string")
        errorString = try lookUp(crypto, "ERR_error_string_n")
        verifyErrorString = try lookUp(crypto, "X509_verify_cert_error_string")
        notAfter = try lookUp(crypto, "X509_get0_notAfter")
        timeToTM = try lookUp(crypto, "ASN1_TIME_to_tm")
    }

    /// `SSL_CTRL_*` command numbers of `ssl.h` for the macros called through `SSL_CTX_ctrl` and `SSL_ctrl`.
    enum Control: Int32 {
        /// `SSL_CTX_set_mode(ctx, op)`: `SSL_CTRL_MODE`.
        case mode = 33
        /// `SSL_set_tlsext_host_name(s, name)`: `SSL_CTRL_SET_TLSEXT_HOSTNAME`, larg `TLSEXT_NAMETYPE_host_name`.
        case setHostName = 55
        /// `SSL_CTX_set1_groups_list(ctx, list)`: `SSL_CTRL_SET_GROUPS_LIST` (the former `SSL_CTRL_SET_CURVES_LIST`).
        case setGroupsList = 92
        /// `SSL_CTX_set_min_proto_version(ctx, version)`: `SSL_CTRL_SET_MIN_PROTO_VERSION`.
        case setMinimumProtocolVersion = 123
        /// `SSL_CTX_set_max_proto_version(ctx, version)`: `SSL_CTRL_SET_MAX_PROTO_VERSION`.
        case setMaximumProtocolVersion = 124
    }

    /// `TLS1_2_VERSION`.
    static let tls12Version = 0x0303
    /// `TLS1_3_VERSION`.
    static let tls13Version = 0x0304
    /// `TLSEXT_NAMETYPE_host_name`.
    static let hostNameType: Int32 = 0
    /// `SSL_FILETYPE_PEM`.
    static let fileTypePEM: Int32 = 1
    /// `SSL_VERIFY_PEER`.
    static let verifyPeer: Int32 = 1

    /// `SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS`: `SSL_write`
    /// returns after each record; a retried write may come from another buffer; a connection with nothing in flight
    /// frees its record buffers (memory per idle connection).
    static let modes = 0x1 | 0x2 | 0x10
    /// `SSL_OP_NO_RENEGOTIATION` (no TLS 1.2 renegotiation either way) `| SSL_OP_NO_COMPRESSION` (CRIME).
    static let options: UInt64 = 0x4000_0000 | 0x0002_0000

    /// `SSL_get_error` results.
    enum ErrorCode: Int32 {
        case none = 0
        case ssl = 1
        case wantRead = 2
        case wantWrite = 3
        case wantX509Lookup = 4
        case syscall = 5
        case zeroReturn = 6
    }

    /// `SSL_RECEIVED_SHUTDOWN`: `SSL_get_shutdown` has seen the peer's close_notify.
    static let receivedShutdown: Int32 = 2
    /// `SSL_TLSEXT_ERR_OK`, `SSL_TLSEXT_ERR_NOACK`: the ALPN selection callback's answers.
    static let extensionOK: Int32 = 0
    static let extensionNoAck: Int32 = 3

    // MARK: Helpers

    /// Empties this thread's OpenSSL error queue; called before every OpenSSL call whose failure is then read
    /// from the queue (`SSL_get_error` requires an empty queue to be right).
    func clearErrors() { errorClear() }

    /// Takes every entry of this thread's error queue (oldest first), leaving it empty: the first code and the
    /// messages joined with "; " (nil when the queue was empty).
    func takeErrors() -> (first: UInt, message: String)? {
        var first: UInt?
        var messages: [String] = []
        while true {
            let code = errorGet()
            guard code != 0 else { break }
            if first == nil { first = code }
            if messages.count < 4 { messages.append(describe(errorCode: code)) }
        }
        guard let first else { return nil }
        return (first, messages.joined(separator: "; "))
    }

    /// One error code's reason text ("certificate verify failed"), or OpenSSL's full line when it has none.
    func describe(errorCode code: UInt) -> String {
        if let reason = errorReason(code) { return String(cString: reason) }
        var buffer = [CChar](repeating: 0, count: 256)
        errorString(code, &buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The reason part of an error code: OpenSSL 3 packs the library in bits 23–30 and the reason in the low 23.
    static func reason(ofError code: UInt) -> Int { Int(code & 0x7F_FFFF) }
    /// The library part of an error code (`ERR_LIB_SSL` is 20); a system error (bit 31) has none.
    static func library(ofError code: UInt) -> Int { code & (1 << 31) != 0 ? 2 : Int((code >> 23) & 0xFF) }
    /// `ERR_LIB_SSL`.
    static let sslLibrary = 20

    /// The Unix time of `certificate`'s notAfter, or nil when it cannot be read.
    func notAfterUnixTime(of certificate: OpaquePointer) -> Int64? {
        guard let time = notAfter(certificate) else { return nil }
        var broken = tm()
        guard timeToTM(time, &broken) == 1 else { return nil }
        let seconds = timegm(&broken)
        return seconds == -1 ? nil : Int64(seconds)
    }
}
