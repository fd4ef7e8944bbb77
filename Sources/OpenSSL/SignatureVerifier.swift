/// A public key held by OpenSSL (`EVP_PKEY`), made from the raw numbers a JWK carries, that verifies signatures.
///
/// Keys are read through a DER `SubjectPublicKeyInfo` built here (``SignatureDER``) and `d2i_PUBKEY`, so OpenSSL
/// checks them as it checks any public key (an EC point must lie on its curve).
///
/// Each scheme the key can verify (ECDSA with its curve's digest, Ed25519, the six RSA schemes) is prepared once in
/// `init`: an `EVP_MD_CTX` through `EVP_DigestVerifyInit` (the signature algorithm and digest fetched, the key's
/// `EVP_PKEY_CTX` made, PSS set up). A verification copies it (`EVP_MD_CTX_copy_ex`) rather than doing that again.
///
/// **Ownership:** owns its `EVP_PKEY` and its prepared contexts, freed in `deinit`.
///
/// **Thread safety:** immutable after `init`; ``verify(_:signature:message:)`` may run on several threads at once
/// (each call verifies in its own copy of the prepared context; the key and the prepared contexts are only read).
package final class PublicKey: @unchecked Sendable {
    // @unchecked Sendable: the EVP_PKEY and the prepared contexts are never modified after init (copying a context
    // reads it), and OpenSSL 3 allows concurrent reads.

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
    /// `EVP_MD_CTX`s initialised for verifying with `key` under a scheme; a scheme missing here (OpenSSL refused
    /// to prepare it) is set up per call.
    private let prepared: [(scheme: Scheme, context: OpaquePointer)]

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
        let kind = kind(Int(library.keyBits(parsed)))
        self.kind = kind
        self.prepared = Self.schemes(for: kind).compactMap { scheme in
            Self.initialised(scheme, key: parsed, library: library).map { (scheme, $0) }
        }
    }

    /// The schemes a key of `kind` is used with: an EC key signs with its curve's digest (RFC 7518 §3.4).
    private static func schemes(for kind: Kind) -> [Scheme] {
        switch kind {
        case .rsa: Digest.allCases.flatMap { [Scheme.rsaPKCS1($0), .rsaPSS($0)] }
        case .ec(.p256): [.ecdsa(.sha256)]
        case .ec(.p384): [.ecdsa(.sha384)]
        case .ec(.p521): [.ecdsa(.sha512)]
        case .ed25519: [.ed25519]
        }
    }

    /// A new `EVP_MD_CTX` set up by `EVP_DigestVerifyInit` to verify with `key` under `scheme`, or `nil`.
    private static func initialised(_ scheme: Scheme, key: OpaquePointer, library: LibCrypto) -> OpaquePointer? {
        var md: OpaquePointer?
        switch scheme {
        case .rsaPKCS1(let digest), .rsaPSS(let digest), .ecdsa(let digest):
            guard let found = library.md(digest) else { return nil }
            md = found
        case .ed25519:
            md = nil
        }
        guard let context = library.newDigestContext() else { return nil }
        var keyContext: OpaquePointer?
        var ready = library.digestVerifyInit(context, &keyContext, md, nil, key) == 1
        if ready, case .rsaPSS = scheme {
            ready =
                library.setRSAPadding(keyContext, LibCrypto.pssPadding) > 0
                && library.setRSAPSSSaltLength(keyContext, LibCrypto.saltLengthIsDigestLength) > 0
        }
        guard ready else {
            library.clearErrors()
            library.freeDigestContext(context)
            return nil
        }
        return context
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
        for (_, context) in prepared { library.freeDigestContext(context) }
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
        signature.withUnsafeBufferPointer { signatureBytes in
            message.withUnsafeBufferPointer { messageBytes in
                verify(scheme, signature: signatureBytes, message: messageBytes)
            }
        }
    }

    /// ``verify(_:signature:message:)`` over buffers: the token's own bytes, without copies.
    package func verify(_ scheme: Scheme, signature: UnsafeBufferPointer<UInt8>, message: UnsafeBufferPointer<UInt8>)
        -> Bool
    {
        switch (scheme, kind) {
        case (.rsaPKCS1, .rsa), (.rsaPSS, .rsa), (.ed25519, .ed25519):
            return verify(scheme, der: signature, message: message)
        case (.ecdsa, .ec(let curve)):
            // The JOSE r ‖ s as the DER ECDSA-Sig-Value OpenSSL reads, built on the stack.
            return SignatureDER.withECDSASignature(raw: signature, width: curve.coordinateBytes) { der in
                verify(scheme, der: der, message: message)
            } ?? false
        default:
            return false
        }
    }

    /// Checks `signature` (as OpenSSL reads it) in a copy of the prepared context of `scheme`, or one set up now.
    private func verify(
        _ scheme: Scheme,
        der signature: UnsafeBufferPointer<UInt8>,
        message: UnsafeBufferPointer<UInt8>
    )
        -> Bool
    {
        guard let context = library.newDigestContext() else { return false }
        defer { library.freeDigestContext(context) }
        if let source = prepared.first(where: { $0.scheme == scheme })?.context {
            guard library.digestContextCopy(context, source) == 1 else {
                library.clearErrors()
                return false
            }
            // Verified once: EVP_DigestVerifyFinal need not keep the context reusable (it would copy it again).
            library.digestContextSetFlags(context, LibCrypto.finaliseFlag)
        } else {
            guard let fresh = Self.initialised(scheme, key: key, library: library) else { return false }
            defer { library.freeDigestContext(fresh) }
            guard library.digestContextCopy(context, fresh) == 1 else {
                library.clearErrors()
                return false
            }
        }
        let result = library.digestVerify(
            context,
            signature.baseAddress,
            signature.count,
            message.baseAddress,
            message.count
        )
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

/// An HMAC secret prepared once for verifying many MACs: one `HMAC_CTX` per ``Digest``, initialised with the key
/// (its inner and outer pads already hashed) and a digest fetched once (``LibCrypto/fetchedDigests``). Each check
/// copies the prepared context (`HMAC_CTX_copy`), so no call fetches an algorithm or looks a digest up by name.
///
/// **Ownership:** owns its contexts, freed in `deinit`.
///
/// **Thread safety:** immutable after `init`; ``matches(_:message:mac:)`` may run on several threads at once (the
/// prepared contexts are only read, by the copy; each call hashes in its own copy).
package final class HMACKey: @unchecked Sendable {
    // @unchecked Sendable: the prepared contexts are never modified after init; copying reads them only.

    /// The secret's length in bytes.
    package let count: Int
    private let prepared: [OpaquePointer?]
    private let library: LibCrypto

    /// The prepared key for `secret`, or `nil` when libcrypto is not loaded or refused it.
    package init?(secret: [UInt8], library: LibCrypto? = LibCrypto.shared) {
        guard let library, secret.count <= Int32.max else { return nil }
        var prepared: [OpaquePointer?] = []
        for digest in Digest.allCases {
            guard let md = library.md(digest), let context = library.hmacContextNew() else {
                prepared.append(nil)
                continue
            }
            let initialised = secret.withUnsafeBytes { bytes in
                // HMAC_Init_ex with a NULL key means "keep the old key": give it a non-NULL pointer for an empty one.
                withUnsafeBytes(of: 0) { zero in
                    library.hmacInit(context, bytes.baseAddress ?? zero.baseAddress, Int32(secret.count), md, nil)
                }
            }
            if initialised == 1 {
                prepared.append(context)
            } else {
                library.clearErrors()
                library.hmacContextFree(context)
                prepared.append(nil)
            }
        }
        guard prepared.contains(where: { $0 != nil }) else { return nil }
        self.count = secret.count
        self.prepared = prepared
        self.library = library
    }

    deinit {
        for context in prepared { library.hmacContextFree(context) }
    }

    /// Whether `mac` is the HMAC-`digest` of `message` under this key (RFC 2104; RFC 7518 §3.2), compared with
    /// `CRYPTO_memcmp` so that the time taken does not tell where a forged MAC differs.
    package func matches(_ digest: Digest, message: UnsafeBufferPointer<UInt8>, mac: UnsafeBufferPointer<UInt8>)
        -> Bool
    {
        guard mac.count == digest.byteCount, let source = prepared[digest.index],
            let context = library.hmacContextNew()
        else { return false }
        defer { library.hmacContextFree(context) }
        // EVP_MAX_MD_SIZE (64) bytes on the stack.
        var output: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
        var length: UInt32 = 0
        let done = withUnsafeMutableBytes(of: &output) { out -> Bool in
            let outBytes = out.bindMemory(to: UInt8.self)
            guard library.hmacContextCopy(context, source) == 1,
                library.hmacUpdate(context, message.baseAddress, message.count) == 1,
                library.hmacFinal(context, outBytes.baseAddress, &length) == 1, Int(length) == mac.count
            else { return false }
            return library.constantTimeCompare(outBytes.baseAddress, mac.baseAddress, mac.count) == 0
        }
        if !done { library.clearErrors() }
        return done
    }

    /// ``matches(_:message:mac:)`` over arrays.
    package func matches(_ digest: Digest, message: [UInt8], mac: [UInt8]) -> Bool {
        message.withUnsafeBufferPointer { messageBytes in
            mac.withUnsafeBufferPointer { macBytes in matches(digest, message: messageBytes, mac: macBytes) }
        }
    }
}
