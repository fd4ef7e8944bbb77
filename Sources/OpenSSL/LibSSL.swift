import Glibc

/// The parts of OpenSSL 3's `libssl.so.3` that ``TLSContext`` and ``TLSEngine`` use, loaded at run time with
/// ``SharedLibrary``; the libcrypto functions TLS needs (memory BIOs, the error queue, a certificate's expiry) are
/// ``crypto``'s, the one libcrypto binding that token verification uses too.
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
    /// `long SSL_CTX_callback_ctrl(SSL_CTX *ctx, int cmd, void (*fp)(void));` (the status callback is passed as
    /// its own type: C calls it with the arguments it has)
    let contextCallbackControl: @convention(c) (OpaquePointer?, Int32, StatusCallback?) -> Int

    /// `int (*)(SSL *s, void *arg)`: `SSL_CTX_set_tlsext_status_cb`'s callback, on a server called during a
    /// handshake whose client asked for the certificate's status (`status_request`).
    typealias StatusCallback = @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Int32

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
    /// `int SSL_key_update(SSL *s, int updatetype);`
    let keyUpdate: @convention(c) (OpaquePointer?, Int32) -> Int32

    /// The libcrypto binding (``LibCrypto/loaded`` for the default library names).
    let crypto: LibCrypto

    /// The loaded libraries, or why they did not load.
    static let shared = load(ssl: ["libssl.so.3"], crypto: ["libcrypto.so.3"])

    /// Opens the first of `ssl` and of `crypto` that loads and looks up every function; the error names the
    /// library that is missing or the first function it lacks.
    static func load(ssl sslNames: [String], crypto cryptoNames: [String]) -> Result<LibSSL, TLSError> {
        let loaded = cryptoNames == ["libcrypto.so.3"] ? LibCrypto.loaded : LibCrypto.load(names: cryptoNames)
        let crypto: LibCrypto
        switch loaded {
        case .success(let library): crypto = library
        case .failure(let error): return .failure(error)
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
    init(ssl: SharedLibrary, crypto: LibCrypto) throws(TLSError) {
        self.crypto = crypto
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
        contextCallbackControl = try lookUp(ssl, "SSL_CTX_callback_ctrl")
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
        keyUpdate = try lookUp(ssl, "SSL_key_update")
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
        /// `SSL_CTX_set_tlsext_status_cb(ctx, cb)` through `SSL_CTX_callback_ctrl`:
        /// `SSL_CTRL_SET_TLSEXT_STATUS_REQ_CB`.
        case setStatusCallback = 63
        /// `SSL_CTX_set_tlsext_status_arg(ctx, arg)`: `SSL_CTRL_SET_TLSEXT_STATUS_REQ_CB_ARG`.
        case setStatusCallbackArgument = 64
        /// `SSL_set_tlsext_status_ocsp_resp(ssl, resp, len)`: `SSL_CTRL_SET_TLSEXT_STATUS_REQ_OCSP_RESP` (the
        /// `SSL` takes the `OPENSSL_malloc`ed response and frees it).
        case setOCSPResponse = 71
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
    /// `SSL_KEY_UPDATE_REQUESTED`: a TLS 1.3 KeyUpdate that asks the peer to update its keys too (and so to answer
    /// with a KeyUpdate of its own).
    static let keyUpdateRequested: Int32 = 1

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
    func clearErrors() { crypto.clearErrors() }

    /// ``LibCrypto/takeErrors()``.
    func takeErrors() -> (first: UInt, message: String)? { crypto.takeErrors() }

    /// The reason part of an error code: OpenSSL 3 packs the library in bits 23–30 and the reason in the low 23.
    static func reason(ofError code: UInt) -> Int { Int(code & 0x7F_FFFF) }
    /// The library part of an error code (`ERR_LIB_SSL` is 20); a system error (bit 31) has none.
    static func library(ofError code: UInt) -> Int { code & (1 << 31) != 0 ? 2 : Int((code >> 23) & 0xFF) }
    /// `ERR_LIB_SSL`.
    static let sslLibrary = 20
}
