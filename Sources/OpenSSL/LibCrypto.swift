import Glibc

/// The one binding of OpenSSL 3's `libcrypto.so.3`, loaded at run time through ``SharedLibrary``: what token
/// verification needs and what TLS (``LibSSL``) needs of libcrypto, in one place.
///
/// - Signatures: HMAC (to recompute a MAC), message digests by name, public keys read from DER (`d2i_PUBKEY`), and
///   `EVP_DigestVerify` for RSA PKCS #1 v1.5, RSA-PSS, ECDSA and Ed25519.
/// - For TLS: memory BIOs (the ``TLSEngine``'s ciphertext buffers), the error queue, a certificate's expiry, and
///   reading an OCSP response to staple (`d2i_OCSP_RESPONSE`, `OPENSSL_malloc` for the copy OpenSSL takes).
///
/// Each stored function
/// carries, in its comment, the C prototype it mirrors; the Swift type beside it must match it (`int` is `Int32`,
/// `size_t` is `Int`, `long` is `Int`, `unsigned int` is `UInt32`, an opaque `EVP_*` pointer is `OpaquePointer`).
///
/// **Ownership:** one process-wide instance (``shared``); the library is never closed.
///
/// **Thread safety:** the functions are OpenSSL 3's, which are thread-safe on distinct contexts; an `EVP_PKEY`
/// that is only read (verification) may be used by several threads at once.
package final class LibCrypto: @unchecked Sendable {
    // @unchecked Sendable: every stored property is an immutable C function pointer.

    /// `const EVP_MD *EVP_get_digestbyname(const char *name);`
    let digestByName: @convention(c) (UnsafePointer<CChar>?) -> OpaquePointer?
    /// `unsigned char *HMAC(const EVP_MD *evp_md, const void *key, int key_len, const unsigned char *data,
    /// size_t data_len, unsigned char *md, unsigned int *md_len);`
    let hmacFunction:
        @convention(c) (
            OpaquePointer?, UnsafeRawPointer?, Int32, UnsafePointer<UInt8>?, Int, UnsafeMutablePointer<UInt8>?,
            UnsafeMutablePointer<UInt32>?
        ) -> UnsafeMutablePointer<UInt8>?
    /// `EVP_MD *EVP_MD_fetch(OSSL_LIB_CTX *ctx, const char *algorithm, const char *properties);`
    let digestFetch: @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, UnsafePointer<CChar>?) -> OpaquePointer?
    /// `HMAC_CTX *HMAC_CTX_new(void);`
    let hmacContextNew: @convention(c) () -> OpaquePointer?
    /// `void HMAC_CTX_free(HMAC_CTX *ctx);`
    let hmacContextFree: @convention(c) (OpaquePointer?) -> Void
    /// `int HMAC_Init_ex(HMAC_CTX *ctx, const void *key, int key_len, const EVP_MD *md, ENGINE *impl);`
    let hmacInit: @convention(c) (OpaquePointer?, UnsafeRawPointer?, Int32, OpaquePointer?, OpaquePointer?) -> Int32
    /// `int HMAC_CTX_copy(HMAC_CTX *dctx, HMAC_CTX *sctx);`
    let hmacContextCopy: @convention(c) (OpaquePointer?, OpaquePointer?) -> Int32
    /// `int HMAC_Update(HMAC_CTX *ctx, const unsigned char *data, size_t len);`
    let hmacUpdate: @convention(c) (OpaquePointer?, UnsafePointer<UInt8>?, Int) -> Int32
    /// `int HMAC_Final(HMAC_CTX *ctx, unsigned char *md, unsigned int *len);`
    let hmacFinal: @convention(c) (OpaquePointer?, UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<UInt32>?) -> Int32
    /// `int EVP_MD_CTX_copy_ex(EVP_MD_CTX *out, const EVP_MD_CTX *in);`
    let digestContextCopy: @convention(c) (OpaquePointer?, OpaquePointer?) -> Int32
    /// `void EVP_MD_CTX_set_flags(EVP_MD_CTX *ctx, int flags);`
    let digestContextSetFlags: @convention(c) (OpaquePointer?, Int32) -> Void
    /// `int CRYPTO_memcmp(const void *a, const void *b, size_t len);` (time independent of the contents)
    let constantTimeCompare: @convention(c) (UnsafeRawPointer?, UnsafeRawPointer?, Int) -> Int32
    /// `EVP_PKEY *d2i_PUBKEY(EVP_PKEY **a, const unsigned char **pp, long length);`
    let d2iPublicKey:
        @convention(c) (UnsafeMutablePointer<OpaquePointer?>?, UnsafeMutablePointer<UnsafePointer<UInt8>?>?, Int)
            -> OpaquePointer?
    /// `void EVP_PKEY_free(EVP_PKEY *key);`
    let freeKey: @convention(c) (OpaquePointer?) -> Void
    /// `int EVP_PKEY_get_bits(const EVP_PKEY *pkey);`
    let keyBits: @convention(c) (OpaquePointer?) -> Int32
    /// `EVP_MD_CTX *EVP_MD_CTX_new(void);`
    let newDigestContext: @convention(c) () -> OpaquePointer?
    /// `void EVP_MD_CTX_free(EVP_MD_CTX *ctx);`
    let freeDigestContext: @convention(c) (OpaquePointer?) -> Void
    /// `int EVP_DigestVerifyInit(EVP_MD_CTX *ctx, EVP_PKEY_CTX **pctx, const EVP_MD *type, ENGINE *e,
    /// EVP_PKEY *pkey);`
    let digestVerifyInit:
        @convention(c) (
            OpaquePointer?, UnsafeMutablePointer<OpaquePointer?>?, OpaquePointer?, OpaquePointer?, OpaquePointer?
        ) -> Int32
    /// `int EVP_DigestVerify(EVP_MD_CTX *ctx, const unsigned char *sig, size_t siglen, const unsigned char *tbs,
    /// size_t tbslen);`
    let digestVerify: @convention(c) (OpaquePointer?, UnsafePointer<UInt8>?, Int, UnsafePointer<UInt8>?, Int) -> Int32
    /// `int EVP_PKEY_CTX_set_rsa_padding(EVP_PKEY_CTX *ctx, int pad_mode);` (a function since OpenSSL 3.0)
    let setRSAPadding: @convention(c) (OpaquePointer?, Int32) -> Int32
    /// `int EVP_PKEY_CTX_set_rsa_pss_saltlen(EVP_PKEY_CTX *ctx, int saltlen);` (a function since OpenSSL 3.0)
    let setRSAPSSSaltLength: @convention(c) (OpaquePointer?, Int32) -> Int32
    /// `void ERR_clear_error(void);`: a failed call leaves errors in the calling thread's queue; they are dropped.
    let clearErrors: @convention(c) () -> Void

    // MARK: Memory BIOs (TLS)

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

    // MARK: Errors and certificates (TLS)

    /// `unsigned long ERR_get_error(void);`
    let errorGet: @convention(c) () -> UInt
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

    // MARK: OCSP stapling (TLS)

    /// `OCSP_RESPONSE *d2i_OCSP_RESPONSE(OCSP_RESPONSE **a, const unsigned char **in, long len);`
    let d2iOCSPResponse:
        @convention(c) (UnsafeMutablePointer<OpaquePointer?>?, UnsafeMutablePointer<UnsafePointer<UInt8>?>?, Int)
            -> OpaquePointer?
    /// `int OCSP_response_status(OCSP_RESPONSE *resp);`
    let ocspResponseStatus: @convention(c) (OpaquePointer?) -> Int32
    /// `void OCSP_RESPONSE_free(OCSP_RESPONSE *a);`
    let freeOCSPResponse: @convention(c) (OpaquePointer?) -> Void
    /// `void *CRYPTO_malloc(size_t num, const char *file, int line);` (`OPENSSL_malloc`: memory OpenSSL frees)
    let malloc: @convention(c) (Int, UnsafePointer<CChar>?, Int32) -> UnsafeMutableRawPointer?
    /// The digests, fetched once (`EVP_MD_fetch`) in ``Digest/allCases`` order and kept for the process: an
    /// `EVP_MD` looked up by name per call (or a legacy one, which OpenSSL 3 fetches again at each init) costs a
    /// fetch through the provider store every time.
    let fetchedDigests: [OpaquePointer?]

    /// `EVP_MD_CTX_FLAG_FINALISE` from `<openssl/evp.h>`: the context is finalised once, so `EVP_DigestVerifyFinal`
    /// need not duplicate it first.
    static let finaliseFlag: Int32 = 0x0200

    /// `RSA_PKCS1_PSS_PADDING` from `<openssl/rsa.h>`.
    static let pssPadding: Int32 = 6
    /// `RSA_PSS_SALTLEN_DIGEST` from `<openssl/rsa.h>`: the salt is as long as the digest (RFC 7518 §3.5).
    static let saltLengthIsDigestLength: Int32 = -1

    /// The process's binding of `libcrypto.so.3`, or why it did not load (the library or a function missing).
    static let loaded: Result<LibCrypto, TLSError> = load(names: ["libcrypto.so.3"])

    /// The loaded library, or `nil` when `libcrypto.so.3` is missing or lacks one of the functions.
    package static let shared: LibCrypto? = try? loaded.get()

    /// Opens the first of `names` that loads and looks up every function; the error names the library or the
    /// first function missing.
    static func load(names: [String]) -> Result<LibCrypto, TLSError> {
        guard let library = SharedLibrary(names) else {
            return .failure(.libraryUnavailable("\(names.joined(separator: ", ")) (OpenSSL 3) could not be loaded"))
        }
        do throws(TLSError) {
            return .success(try LibCrypto(library))
        } catch {
            return .failure(error)
        }
    }

    /// Looks up every function, failing with the name of the first one missing.
    init(_ library: SharedLibrary) throws(TLSError) {
        func lookUp<F>(_ name: String, as type: F.Type = F.self) throws(TLSError) -> F {
            guard let function = library.function(name, as: type) else {
                throw .libraryUnavailable("OpenSSL 3 lacks \(name)")
            }
            return function
        }
        digestByName = try lookUp("EVP_get_digestbyname")
        hmacFunction = try lookUp("HMAC")
        digestFetch = try lookUp("EVP_MD_fetch")
        hmacContextNew = try lookUp("HMAC_CTX_new")
        hmacContextFree = try lookUp("HMAC_CTX_free")
        hmacInit = try lookUp("HMAC_Init_ex")
        hmacContextCopy = try lookUp("HMAC_CTX_copy")
        hmacUpdate = try lookUp("HMAC_Update")
        hmacFinal = try lookUp("HMAC_Final")
        digestContextCopy = try lookUp("EVP_MD_CTX_copy_ex")
        digestContextSetFlags = try lookUp("EVP_MD_CTX_set_flags")
        constantTimeCompare = try lookUp("CRYPTO_memcmp")
        d2iPublicKey = try lookUp("d2i_PUBKEY")
        freeKey = try lookUp("EVP_PKEY_free")
        keyBits = try lookUp("EVP_PKEY_get_bits")
        newDigestContext = try lookUp("EVP_MD_CTX_new")
        freeDigestContext = try lookUp("EVP_MD_CTX_free")
        digestVerifyInit = try lookUp("EVP_DigestVerifyInit")
        digestVerify = try lookUp("EVP_DigestVerify")
        setRSAPadding = try lookUp("EVP_PKEY_CTX_set_rsa_padding")
        setRSAPSSSaltLength = try lookUp("EVP_PKEY_CTX_set_rsa_pss_saltlen")
        clearErrors = try lookUp("ERR_clear_error")
        memoryMethod = try lookUp("BIO_s_mem")
        bioNew = try lookUp("BIO_new")
        bioFree = try lookUp("BIO_free")
        bioRead = try lookUp("BIO_read")
        bioWrite = try lookUp("BIO_write")
        bioPending = try lookUp("BIO_ctrl_pending")
        errorGet = try lookUp("ERR_get_error")
        errorReason = try lookUp("ERR_reason_error_string")
        errorString = try lookUp("ERR_error_string_n")
        verifyErrorString = try lookUp("X509_verify_cert_error_string")
        notAfter = try lookUp("X509_get0_notAfter")
        timeToTM = try lookUp("ASN1_TIME_to_tm")
        d2iOCSPResponse = try lookUp("d2i_OCSP_RESPONSE")
        ocspResponseStatus = try lookUp("OCSP_response_status")
        freeOCSPResponse = try lookUp("OCSP_RESPONSE_free")
        malloc = try lookUp("CRYPTO_malloc")
        let fetch = digestFetch
        fetchedDigests = Digest.allCases.map { digest in digest.name.withCString { fetch(nil, $0, nil) } }
    }

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

    /// The Unix time of `certificate`'s notAfter, or nil when it cannot be read.
    func notAfterUnixTime(of certificate: OpaquePointer) -> Int64? {
        guard let time = notAfter(certificate) else { return nil }
        var broken = tm()
        guard timeToTM(time, &broken) == 1 else { return nil }
        let seconds = timegm(&broken)
        return seconds == -1 ? nil : Int64(seconds)
    }

    /// The `EVP_MD` of `digest`, fetched once for the process (``fetchedDigests``; never freed), or `nil`.
    func md(_ digest: Digest) -> OpaquePointer? {
        fetchedDigests[digest.index] ?? digest.name.withCString { digestByName($0) }
    }

    /// HMAC of `message` under `key` with `digest`, or `nil` when OpenSSL failed.
    package func hmac(_ digest: Digest, key: [UInt8], message: [UInt8]) -> [UInt8]? {
        guard let md = md(digest), key.count <= Int32.max else { return nil }
        var output = [UInt8](repeating: 0, count: 64)  // EVP_MAX_MD_SIZE
        var length: UInt32 = 0
        let done = key.withUnsafeBytes { keyBytes in
            message.withUnsafeBufferPointer { messageBytes in
                output.withUnsafeMutableBufferPointer { outputBytes in
                    // HMAC with a NULL key pointer and length 0 is valid; give it a non-NULL one anyway.
                    hmacFunction(
                        md,
                        keyBytes.baseAddress ?? UnsafeRawPointer(outputBytes.baseAddress!),
                        Int32(key.count),
                        messageBytes.baseAddress,
                        messageBytes.count,
                        outputBytes.baseAddress,
                        &length
                    ) != nil
                }
            }
        }
        guard done, Int(length) == digest.byteCount else {
            clearErrors()
            return nil
        }
        return Array(output.prefix(Int(length)))
    }

    /// Whether `left` and `right` are equal, in time that depends only on their lengths (`CRYPTO_memcmp`).
    package func equalInConstantTime(_ left: [UInt8], _ right: [UInt8]) -> Bool {
        guard left.count == right.count else { return false }
        if left.isEmpty { return true }
        let difference = left.withUnsafeBytes { a in
            right.withUnsafeBytes { b in constantTimeCompare(a.baseAddress, b.baseAddress, a.count) }
        }
        return difference == 0
    }
}

/// A message digest of the SHA-2 family, as JWS algorithms use them.
package enum Digest: Sendable, CaseIterable {
    case sha256
    case sha384
    case sha512

    /// OpenSSL's name for it (`EVP_get_digestbyname`).
    var name: String {
        switch self {
        case .sha256: "SHA256"
        case .sha384: "SHA384"
        case .sha512: "SHA512"
        }
    }

    /// Its place in ``allCases``.
    var index: Int {
        switch self {
        case .sha256: 0
        case .sha384: 1
        case .sha512: 2
        }
    }

    /// Bytes of output.
    package var byteCount: Int {
        switch self {
        case .sha256: 32
        case .sha384: 48
        case .sha512: 64
        }
    }
}
