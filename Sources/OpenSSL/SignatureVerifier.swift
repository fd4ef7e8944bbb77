/// A public key held by OpenSSL (`EVP_PKEY`), made from the raw numbers a JWK carries, that verifies signatures.
///
/// Keys are read through a DER `SubjectPublicKeyInfo` built here (``SignatureDER``) and `d2i_PUBKEY`, so OpenSSL
/// checks them as it checks any public key (an EC point must lie on its curve).
///
/// **Ownership:** owns its `EVP_PKEY`, freed in `deinit`.
///
/// **Thread safety:** immutable after `init`; ``verify(_:signature:message:)`` may run on several threads at once
/// (each call has its own `EVP_MD_CTX`; the key is only read).
package final class PublicKey: @unchecked Sendable {
    // @unchecked Sendable: the EVP_PKEY is never modified after init, and OpenSSL 3 allows concurrent reads.

    /// What kind of key it is, and its size where the algorithms care.
    package enum Kind: Equatable, Sendable {
        /// RSA with a modulus of `bits` bits.
        case rsa(bits: Int)
        case ec(Curve)
        case ed25519
    }

    /// Why a key could not be made.
    package enum KeyError: Error, Equatable, Sendable {
        /// `libcrypto.so.3` is not loaded (``LibCrypto/shared`` is `nil`).
        case cryptoUnavailable
        /// OpenSSL refused the key, or its parts have the wrong sizes.
        case invalid(String)
    }

    package let kind: Kind
    private let key: OpaquePointer
    private let library: LibCrypto

    private init(der: [UInt8], library: LibCrypto?, kind: (Int) -> Kind) throws(KeyError) {
        guard let library else { throw .cryptoUnavailable }
        let parsed = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor = buffer.baseAddress
            return library.d2iPublicKey(nil, &cursor, buffer.count)
        }
        guard let parsed else {
            library.clearErrors()
            throw .invalid("OpenSSL does not accept the key")
        }
        self.key = parsed
        self.library = library
        self.kind = kind(Int(library.keyBits(parsed)))
    }

    /// An RSA key from its big-endian modulus `n` and public exponent `e`.
    package convenience init(
        rsaModulus modulus: [UInt8],
        exponent: [UInt8],
        library: LibCrypto? = LibCrypto.shared
    ) throws(KeyError) {
        guard modulus.contains(where: { $0 != 0 }), exponent.contains(where: { $0 != 0 }), exponent.count <= 8 else {
            throw .invalid("an RSA key needs a non-zero modulus and a non-zero exponent of at most 64 bits")
        }
        try self.init(
            der: SignatureDER.rsaPublicKey(modulus: modulus, exponent: exponent),
            library: library,
            kind: { .rsa(bits: $0) }
        )
    }

    /// An EC key: the point (`x`, `y`) on `curve`, each coordinate exactly ``Curve/coordinateBytes`` long.
    package convenience init(curve: Curve, x: [UInt8], y: [UInt8], library: LibCrypto? = LibCrypto.shared)
        throws(KeyError)
    {
        guard x.count == curve.coordinateBytes, y.count == curve.coordinateBytes else {
            throw .invalid("a \(curve.rawValue) point has coordinates of \(curve.coordinateBytes) bytes")
        }
        try self.init(
            der: SignatureDER.ecPublicKey(curve: curve, x: x, y: y),
            library: library,
            kind: { _ in .ec(curve) }
        )
    }

    /// An Ed25519 key from its 32 bytes (RFC 8032 §5.1.5).
    package convenience init(ed25519 raw: [UInt8], library: LibCrypto? = LibCrypto.shared) throws(KeyError) {
        guard raw.count == 32 else { throw .invalid("an Ed25519 key is 32 bytes") }
        try self.init(der: SignatureDER.ed25519PublicKey(raw), library: library, kind: { _ in .ed25519 })
    }

    deinit {
        library.freeKey(key)
    }

    /// How a signature is checked.
    package enum Scheme: Equatable, Sendable {
        /// RSASSA-PKCS1-v1_5 (RFC 8017 §8.2) over `digest`.
        case rsaPKCS1(Digest)
        /// RSASSA-PSS (RFC 8017 §8.1), MGF1 with the same digest and a salt as long as it (RFC 7518 §3.5).
        case rsaPSS(Digest)
        /// ECDSA over `digest`, the signature in JWS's fixed-width `r ‖ s` form.
        case ecdsa(Digest)
        /// Ed25519 (pure, RFC 8032).
        case ed25519
    }

    /// Whether `signature` is this key's signature of `message` under `scheme`. A scheme that does not fit the key
    /// (ECDSA with an RSA key, a curve's signature of the wrong width) is `false`, never a crash.
    package func verify(_ scheme: Scheme, signature: [UInt8], message: [UInt8]) -> Bool {
        var digest: Digest?
        var signatureBytes = signature
        switch (scheme, kind) {
        case (.rsaPKCS1(let hash), .rsa), (.rsaPSS(let hash), .rsa):
            digest = hash
        case (.ecdsa(let hash), .ec(let curve)):
            guard let der = SignatureDER.ecdsaSignature(raw: signature, width: curve.coordinateBytes) else {
                return false
            }
            digest = hash
            signatureBytes = der
        case (.ed25519, .ed25519):
            digest = nil
        default:
            return false
        }
        var md: OpaquePointer?
        if let digest {
            guard let found = library.md(digest) else { return false }
            md = found
        }
        guard let context = library.newDigestContext() else { return false }
        defer { library.freeDigestContext(context) }
        var keyContext: OpaquePointer?
        guard library.digestVerifyInit(context, &keyContext, md, nil, key) == 1 else {
            library.clearErrors()
            return false
        }
        if case .rsaPSS = scheme {
            guard library.setRSAPadding(keyContext, LibCrypto.pssPadding) > 0,
                library.setRSAPSSSaltLength(keyContext, LibCrypto.saltLengthIsDigestLength) > 0
            else {
                library.clearErrors()
                return false
            }
        }
        let result = signatureBytes.withUnsafeBufferPointer { signaturePointer in
            message.withUnsafeBufferPointer { messagePointer in
                library.digestVerify(
                    context,
                    signaturePointer.baseAddress,
                    signaturePointer.count,
                    messagePointer.baseAddress,
                    messagePointer.count
                )
            }
        }
        if result != 1 { library.clearErrors() }
        return result == 1
    }
}

/// HMAC verification: recomputes the MAC and compares it in constant time.
///
/// **Thread safety:** immutable; shared freely.
package struct SignatureVerifier: Sendable {
    private let library: LibCrypto

    /// The verifier over `library`, or `nil` when it is not loaded.
    package init?(library: LibCrypto? = LibCrypto.shared) {
        guard let library else { return nil }
        self.library = library
    }

    /// Whether `mac` is the HMAC-`digest` of `message` under `key` (RFC 2104; RFC 7518 §3.2), compared with
    /// `CRYPTO_memcmp` so that the time taken does not tell where a forged MAC differs.
    package func hmacMatches(_ digest: Digest, key: [UInt8], message: [UInt8], mac: [UInt8]) -> Bool {
        guard let expected = library.hmac(digest, key: key, message: message) else { return false }
        return library.equalInConstantTime(expected, mac)
    }
}
