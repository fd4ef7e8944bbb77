/// Spout's JWT verification as a library user sees it: a JWK Set in, tokens checked against it with the same
/// ``TokenVerifier`` the channel routes use (the same algorithms, refusals and verified-token cache). The benchmark
/// (`bench/JWTBench`, in a package of its own) measures verification through this entry point.
///
///     let verifier = try SignedTokenVerifier(jwks: Array(jwksJSON.utf8))
///     switch verifier.verify(token, now: Date().timeIntervalSince1970) {
///     case .success(let subject): print("ok", subject ?? "-")
///     case .failure(let refusal): print(refusal.problemType, refusal.detail)
///     }
///
/// **Thread safety:** every method may be called from any thread (the cache is the verifier's, behind its lock).
public final class SignedTokenVerifier: Sendable {
    /// Why a token or a key set was refused.
    public struct Refusal: Error, Equatable, Sendable {
        /// The problem type Spout answers with (`/problems/token-expired`, …); for a key set, empty.
        public let problemType: String
        /// What was wrong, for people.
        public let detail: String
    }

    private let verifier: TokenVerifier

    /// - Parameters:
    ///   - jwks: A JWK Set document (RFC 7517 §5).
    ///   - leewaySeconds: Clock skew forgiven on `exp`, `nbf` and `iat`.
    ///   - cacheEntries: Verified tokens remembered (least recently used first out).
    public init(jwks: [UInt8], leewaySeconds: Double = 30, cacheEntries: Int = 10_000) throws(Refusal) {
        let keys: JWKSet
        do {
            keys = try JWKSet(json: jwks)
        } catch {
            throw Refusal(problemType: "", detail: error.reason)
        }
        verifier = TokenVerifier(
            keys: keys,
            settings: TokenVerifier.Settings(leewaySeconds: leewaySeconds, cacheEntries: cacheEntries)
        )
    }

    /// The token's `sub` if it is a valid JWT at `now` (seconds since 1970), else why not. A token verified before
    /// (and still remembered) costs no signature check; its times are checked again.
    public func verify(_ token: String, now: Double) -> Result<String?, Refusal> {
        verifier.verify(token, now: now).map(\.subject).mapError(Self.refusal)
    }

    /// ``verify(_:now:)`` without the cache, neither read nor written: every call checks the signature (a cold
    /// verification).
    public func verifyUncached(_ token: String, now: Double) -> Result<String?, Refusal> {
        do {
            let claims = try verifier.verifyUncached(token)
            if let refusal = verifier.checkTimes(claims, now: now) { return .failure(Self.refusal(refusal)) }
            return .success(claims.subject)
        } catch {
            return .failure(Self.refusal(error))
        }
    }

    /// Tokens remembered as verified.
    public var cachedTokens: Int { verifier.cachedTokens }

    private static func refusal(_ refusal: TokenRefusal) -> Refusal {
        let problem = refusal.problem
        return Refusal(problemType: problem.type, detail: problem.detail)
    }
}
