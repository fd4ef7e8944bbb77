import Reactive

/// Publish rate limits per client: a token bucket for each token subject (a JWT's `sub`), static token, or client
/// address when anonymous, refilled at `channels.publishRatePerMinute` up to `channels.publishBurst`.
///
/// A publish that finds its bucket empty is answered `429` with `Retry-After` and the `RateLimit` /
/// `RateLimit-Policy` fields of the IETF httpapi draft (``headers(retryAfter:)``). The buckets are bounded
/// (``maxClients``, least recently used first out: a forgotten client starts with a full bucket again).
///
/// **Thread safety:** every method may be called from any thread; the buckets are guarded by one lock.
final class PublishRateLimiter: @unchecked Sendable {
    // @unchecked Sendable: `buckets` is touched only inside `lock`; the rest is immutable.

    /// Events published per minute, on average, per client.
    let perMinute: Int
    /// Publishes a client may make at once after being idle.
    let burst: Int
    /// Clients remembered, at most.
    static let maxClients = 100_000

    private struct Bucket {
        var tokens: Double
        var updated: Double
    }

    private let lock = Lock()
    private var buckets = LRUCache<String, Bucket>(capacity: PublishRateLimiter.maxClients)

    init(perMinute: Int, burst: Int) {
        self.perMinute = max(1, perMinute)
        self.burst = max(1, burst)
    }

    /// What ``take(_:now:)`` decided.
    enum Decision: Equatable, Sendable {
        /// Allowed; `remaining` publishes are left in the bucket, which is full again in `fullInSeconds`.
        case allowed(remaining: Int, fullInSeconds: Int)
        /// Refused; one publish is available again in `retryAfter` whole seconds.
        case refused(retryAfter: Int)
    }

    /// Takes one publish from `client`'s bucket at `now` (seconds): `nil` when allowed, else the whole seconds to
    /// wait until one is available again.
    func take(_ client: String, now: Double) -> Int? {
        if case .refused(let wait) = decide(client, now: now) { return wait }
        return nil
    }

    /// Takes one publish from `client`'s bucket at `now` (seconds), and says what is left.
    func decide(_ client: String, now: Double) -> Decision {
        let rate = Double(perMinute) / 60
        let burst = Double(self.burst)
        return lock.withLock { () -> Decision in
            var bucket = buckets[client] ?? Bucket(tokens: burst, updated: now)
            let elapsed = max(0, now - bucket.updated)
            bucket.tokens = min(burst, bucket.tokens + elapsed * rate)
            bucket.updated = now
            let answer: Decision
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                answer = .allowed(
                    remaining: Int(bucket.tokens.rounded(.down)),
                    fullInSeconds: Int(((burst - bucket.tokens) / rate).rounded(.up))
                )
            } else {
                answer = .refused(retryAfter: max(1, Int(((1 - bucket.tokens) / rate).rounded(.up))))
            }
            buckets.insert(bucket, for: client, cost: 0)
            return answer
        }
    }

    /// `Retry-After`, `RateLimit-Policy` and `RateLimit` for a refused publish.
    func headers(retryAfter seconds: Int) -> [(String, String)] {
        [
            ("Retry-After", String(seconds)),
            ("RateLimit-Policy", policyField),
            ("RateLimit", #""publish";r=0;t=\#(seconds)"#),
        ]
    }

    /// `RateLimit-Policy` and `RateLimit` for an allowed publish: `r` the publishes left in the bucket, `t` the
    /// seconds until it is full again (the draft's reset of a token bucket's quota).
    func headers(remaining: Int, fullInSeconds: Int) -> [(String, String)] {
        [
            ("RateLimit-Policy", policyField),
            ("RateLimit", #""publish";r=\#(remaining);t=\#(fullInSeconds)"#),
        ]
    }

    /// `"publish";q=<per minute>;w=60`.
    private var policyField: String { #""publish";q=\#(perMinute);w=60"# }

    /// The bucket of `identity` publishing from `client`: its JWT subject, a static token, or the address.
    static func key(_ identity: ChannelIdentity, client: String) -> String {
        switch identity.credential {
        case .jwt(let subject): "sub:" + (subject ?? "")
        case .staticToken: "static"
        case .none, .unrecognized: "address:" + client
        }
    }
}
