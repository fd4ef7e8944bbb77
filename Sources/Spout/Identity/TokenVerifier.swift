import OpenSSL
import Reactive

/// Verifies JWTs (JWS compact) against the configured JWK Set and checks their claims; remembers the tokens it has
/// verified so that a subscriber reconnecting with the same token costs no signature check.
///
/// The checks, in order: the token parses (``JWSToken``: no `alg: none`, no `crit`, bounded size); the keys with
/// its `kid` whose type fits its algorithm (a key of another type is algorithm confusion, refused, never tried: an
/// HMAC token is never checked with a public key used as a secret); the key is long enough (an HMAC secret at least
/// as long as the hash, RSA at least 2048 bits); the signature; then `iss` and `aud` when configured, and `exp`,
/// `nbf`, `iat` with ``Settings/leewaySeconds``.
///
/// **Ownership:** one per service (``ChannelAccess``). The key set is replaced whole by ``replaceKeys(_:)`` (a JWKS
/// URL's refresh), which also forgets every verified token.
///
/// **Thread safety:** every method may be called from any thread; the key set and the cache are guarded by one
/// lock, held only to read or swap them (never while verifying).
final class TokenVerifier: @unchecked Sendable {
    // @unchecked Sendable: `keys` and `cache` are touched only inside `lock`; the rest is immutable.

    /// What is checked besides the signature.
    struct Settings: Sendable, Equatable {
        /// Seconds of clock skew forgiven on `exp`, `nbf` and `iat`.
        var leewaySeconds: Double = 30
        /// `iss` a token must carry, or `nil` for any.
        var issuer: String?
        /// A value `aud` must contain, or `nil` for any.
        var audience: String?
        /// Verified tokens remembered, at most.
        var cacheEntries = 10_000
    }

    let settings: Settings
    private let lock = Lock()
    private var keys: JWKSet
    private var cache: LRUCache<String, JWTClaims>

    init(keys: JWKSet, settings: Settings = Settings()) {
        self.settings = settings
        self.keys = keys
        self.cache = LRUCache(capacity: settings.cacheEntries)
    }

    /// The keys tokens are checked with now.
    var currentKeys: JWKSet { lock.withLock { keys } }

    /// Tokens remembered as verified.
    var cachedTokens: Int { lock.withLock { cache.count } }

    /// Swaps in a new key set, and forgets the tokens verified with the old one (a key may have been withdrawn).
    func replaceKeys(_ newKeys: JWKSet) {
        lock.withLock {
            keys = newKeys
            cache = LRUCache(capacity: settings.cacheEntries)
        }
    }

    /// The claims of `token` if it is a valid JWT at `now` (seconds since 1970), else why not.
    func verify(_ token: String, now: Double) -> Result<JWTClaims, TokenRefusal> {
        if let claims = lock.withLock({ cache[token] }) {
            if let refusal = checkTimes(claims, now: now) { return .failure(refusal) }
            return .success(claims)
        }
        let claims: JWTClaims
        do {
            claims = try verifyUncached(token)
        } catch {
            return .failure(error)
        }
        if let refusal = checkTimes(claims, now: now) { return .failure(refusal) }
        lock.withLock { _ = cache.insert(claims, for: token, cost: 0) }
        return .success(claims)
    }

    /// Everything but the times: the signature, then `iss` and `aud`; the cache is neither read nor written (a cold
    /// verification, as the benchmark measures it).
    func verifyUncached(_ token: String) throws(TokenRefusal) -> JWTClaims {
        var token = token
        let result = token.withUTF8 { bytes in
            Result { () throws(TokenRefusal) in try verifyUncached(bytes: bytes) }
        }
        return try result.get()
    }

    /// ``verifyUncached(_:)`` over the token's bytes: its parts are read in place (``JWSToken/withParsed(_:_:)``),
    /// the keys tried without building a list of them, the claims read without a JSON tree.
    private func verifyUncached(bytes: UnsafeBufferPointer<UInt8>) throws(TokenRefusal) -> JWTClaims {
        let keys = currentKeys
        let claims = try JWSToken.withParsed(bytes) { jws throws(TokenRefusal) in
            var tried = false
            var weakness: TokenRefusal?
            var verified = false
            for key in keys.keys where (jws.keyID == nil || key.keyID == jws.keyID) && key.fits(jws.algorithm) {
                tried = true
                if let refusal = Self.weakness(of: key, for: jws.algorithm) {
                    weakness = refusal
                    continue
                }
                if check(jws, with: key) {
                    verified = true
                    break
                }
            }
            guard tried else { throw Self.noCandidate(algorithm: jws.algorithm, keyID: jws.keyID, keys) }
            guard verified else { throw weakness ?? .badSignature }
            return try JWTClaims.parse(jws.payload)
        }
        if let issuer = settings.issuer, claims.issuer != issuer {
            throw .notAccepted(
                "the token's iss is \(claims.issuer.map(ConfigJSON.quote) ?? "missing"), not the configured issuer"
            )
        }
        if let audience = settings.audience, !claims.audience.contains(audience) {
            throw .notAccepted("the token's aud does not include the configured audience")
        }
        return claims
    }

    /// Why no key was tried: the `kid` is unknown, or its key (or, without `kid`, every key) is of another type.
    private static func noCandidate(algorithm: JWSAlgorithm, keyID: String?, _ keys: JWKSet) -> TokenRefusal {
        let named = keyID.map { keyID in keys.keys.filter { $0.keyID == keyID } } ?? keys.keys
        if let keyID, named.isEmpty {
            return .unknownKey("no configured key has kid \(ConfigJSON.quote(keyID))")
        }
        if let other = named.first(where: { $0.keyType != algorithm.keyType }) {
            return .unsupported(
                "alg \(algorithm.rawValue) needs a key of type \(algorithm.keyType); the configured key is "
                    + "\(other.keyType) (a token may not choose how its key is used)"
            )
        }
        if let bound = named.first(where: { $0.algorithm != nil && $0.algorithm != algorithm.rawValue }) {
            return .unsupported(
                "the key is for alg \(bound.algorithm ?? ""), and the token says \(algorithm.rawValue)"
            )
        }
        return .unknownKey("no configured key fits alg \(algorithm.rawValue)")
    }

    /// Why `key` is too weak for `algorithm`, or `nil`.
    private static func weakness(of key: JWKSet.Key, for algorithm: JWSAlgorithm) -> TokenRefusal? {
        switch (key.material, algorithm) {
        case (.secret(let secret), _):
            let needed = digest(algorithm).byteCount
            return secret.count < needed
                ? .unsupported(
                    "the HMAC key is \(secret.count) bytes; \(algorithm.rawValue) needs at least \(needed) (RFC 7518 §3.2)"
                )
                : nil
        case (.publicKey(let publicKey), _):
            if case .rsa(let bits) = publicKey.kind, bits < 2048 {
                return .unsupported("the RSA key has \(bits) bits; at least 2048 are needed (RFC 7518 §3.3)")
            }
            if case .ec(let curve) = publicKey.kind, curve != Self.curve(algorithm) {
                return .unsupported("the key is on \(curve.rawValue), which \(algorithm.rawValue) does not use")
            }
            return nil
        }
    }

    /// Whether `jws`'s signature verifies with `key`.
    private func check(_ jws: JWSToken.Parts, with key: JWKSet.Key) -> Bool {
        let algorithm = jws.algorithm
        switch key.material {
        case .secret:
            switch algorithm {
            case .hs256, .hs384, .hs512:
                return key.hmac?.matches(Self.digest(algorithm), message: jws.signingInput, mac: jws.signature)
                    ?? false
            default: return false  // a secret is only ever an HMAC key
            }
        case .publicKey(let publicKey):
            let scheme: PublicKey.Scheme
            switch algorithm {
            case .hs256, .hs384, .hs512: return false  // a public key is never used as an HMAC secret
            case .rs256, .rs384, .rs512: scheme = .rsaPKCS1(Self.digest(algorithm))
            case .ps256, .ps384, .ps512: scheme = .rsaPSS(Self.digest(algorithm))
            case .es256, .es384, .es512: scheme = .ecdsa(Self.digest(algorithm))
            case .edDSA: scheme = .ed25519
            }
            return publicKey.verify(scheme, signature: jws.signature, message: jws.signingInput)
        }
    }

    private static func digest(_ algorithm: JWSAlgorithm) -> Digest {
        switch algorithm {
        case .hs256, .rs256, .ps256, .es256, .edDSA: .sha256
        case .hs384, .rs384, .ps384, .es384: .sha384
        case .hs512, .rs512, .ps512, .es512: .sha512
        }
    }

    private static func curve(_ algorithm: JWSAlgorithm) -> Curve? {
        switch algorithm {
        case .es256: .p256
        case .es384: .p384
        case .es512: .p521
        default: nil
        }
    }

    /// `exp`, `nbf` and `iat` against `now`, with the leeway.
    func checkTimes(_ claims: JWTClaims, now: Double) -> TokenRefusal? {
        let leeway = settings.leewaySeconds
        if let expires = claims.expires, now > expires + leeway {
            return .expired("the token expired at \(Self.formatted(expires)) (now \(Self.formatted(now)))")
        }
        if let notBefore = claims.notBefore, now + leeway < notBefore {
            return .notAccepted("the token is not valid before \(Self.formatted(notBefore))")
        }
        if let issuedAt = claims.issuedAt, now + leeway < issuedAt {
            return .notAccepted("the token was issued in the future (iat \(Self.formatted(issuedAt)))")
        }
        return nil
    }

    /// Seconds since 1970, as an integer when it is one.
    private static func formatted(_ seconds: Double) -> String {
        seconds == seconds.rounded() && abs(seconds) < 1e15 ? "\(Int(seconds))" : "\(seconds)"
    }
}
