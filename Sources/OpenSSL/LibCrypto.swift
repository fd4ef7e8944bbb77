/// The parts of OpenSSL 3's `libcrypto.so.3` that verify signatures, loaded at run time through ``SharedLibrary``.
///
/// Only verification: HMAC (to recompute a MAC), message digests by name, public keys read from DER
/// (`d2i_PUBKEY`), and `EVP_DigestVerify` for RSA PKCS #1 v1.5, RSA-PSS, ECDSA and Ed25519. Each stored function
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

    /// `RSA_PKCS1_PSS_PADDING` from `<openssl/rsa.h>`.
    static let pssPadding: Int32 = 6
    /// `RSA_PSS_SALTLEN_DIGEST` from `<openssl/rsa.h>`: the salt is as long as the digest (RFC 7518 §3.5).
    static let saltLengthIsDigestLength: Int32 = -1

    /// The loaded library, or `nil` when `libcrypto.so.3` is missing or lacks one of the functions.
    package static let shared: LibCrypto? = LibCrypto(names: ["libcrypto.so.3"])

    /// Loads the first of `names` that opens and has every function.
    init?(names: [String]) {
        guard let library = SharedLibrary(names) else { return nil }
        guard
            let digestByName = library.function(
                "EVP_get_digestbyname",
                as: (@convention(c) (UnsafePointer<CChar>?) -> OpaquePointer?).self
            ),
            let hmacFunction = library.function(
                "HMAC",
                as: (@convention(c) (
                    OpaquePointer?, UnsafeRawPointer?, Int32, UnsafePointer<UInt8>?, Int, UnsafeMutablePointer<UInt8>?,
                    UnsafeMutablePointer<UInt32>?
                ) -> UnsafeMutablePointer<UInt8>?).self
            ),
            let constantTimeCompare = library.function(
                "CRYPTO_memcmp",
                as: (@convention(c) (UnsafeRawPointer?, UnsafeRawPointer?, Int) -> Int32).self
            ),
            let d2iPublicKey = library.function(
                "d2i_PUBKEY",
                as: (@convention(c) (
                    UnsafeMutablePointer<OpaquePointer?>?, UnsafeMutablePointer<UnsafePointer<UInt8>?>?, Int
                ) -> OpaquePointer?).self
            ),
            let freeKey = library.function("EVP_PKEY_free", as: (@convention(c) (OpaquePointer?) -> Void).self),
            let keyBits = library.function("EVP_PKEY_get_bits", as: (@convention(c) (OpaquePointer?) -> Int32).self),
            let newDigestContext = library.function("EVP_MD_CTX_new", as: (@convention(c) () -> OpaquePointer?).self),
            let freeDigestContext = library.function(
                "EVP_MD_CTX_free",
                as: (@convention(c) (OpaquePointer?) -> Void).self
            ),
            let digestVerifyInit = library.function(
                "EVP_DigestVerifyInit",
                as: (@convention(c) (
                    OpaquePointer?, UnsafeMutablePointer<OpaquePointer?>?, OpaquePointer?, OpaquePointer?,
                    OpaquePointer?
                ) -> Int32).self
            ),
            let digestVerify = library.function(
                "EVP_DigestVerify",
                as: (@convention(c) (OpaquePointer?, UnsafePointer<UInt8>?, Int, UnsafePointer<UInt8>?, Int) -> Int32)
                    .self
            ),
            let setRSAPadding = library.function(
                "EVP_PKEY_CTX_set_rsa_padding",
                as: (@convention(c) (OpaquePointer?, Int32) -> Int32).self
            ),
            let setRSAPSSSaltLength = library.function(
                "EVP_PKEY_CTX_set_rsa_pss_saltlen",
                as: (@convention(c) (OpaquePointer?, Int32) -> Int32).self
            ),
            let clearErrors = library.function("ERR_clear_error", as: (@convention(c) () -> Void).self)
        else {
            return nil
        }
        self.digestByName = digestByName
        self.hmacFunction = hmacFunction
        self.constantTimeCompare = constantTimeCompare
        self.d2iPublicKey = d2iPublicKey
        self.freeKey = freeKey
        self.keyBits = keyBits
        self.newDigestContext = newDigestContext
        self.freeDigestContext = freeDigestContext
        self.digestVerifyInit = digestVerifyInit
        self.digestVerify = digestVerify
        self.setRSAPadding = setRSAPadding
        self.setRSAPSSSaltLength = setRSAPSSSaltLength
        self.clearErrors = clearErrors
    }

    /// The `EVP_MD` of `digest` (a static object of the library; never freed), or `nil`.
    func md(_ digest: Digest) -> OpaquePointer? {
        digest.name.withCString { digestByName($0) }
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

    /// Bytes of output.
    package var byteCount: Int {
        switch self {
        case .sha256: 32
        case .sha384: 48
        case .sha512: 64
        }
    }
}
