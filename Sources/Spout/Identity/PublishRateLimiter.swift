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

    /// Takes one publish from `client`'s bucket at `now` (seconds): `nil` when allowed, else the whole seconds to
    /// wait until one is available again.
    func take(_ client: String, now: Double) -> Int? {
        let rate = Double(perMinute) / 60
        return lock.withLock { () -> Int? in
            var bucket = buckets[client] ?? Bucket(tokens: Double(burst), updated: now)
            let elapsed = max(0, now - bucket.updated)
            bucket.tokens = min(Double(burst), bucket.tokens + elapsed * rate)
            bucket.updated = now
            let answer: Int?
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                answer = nil
            } else {
                answer = max(1, Int(((1 - bucket.tokens) / rate).rounded(.up)))
            }
            buckets.insert(bucket, for: client, cost: 0)
            return answer
        }
    }

    /// `Retry-After`, `RateLimit-Policy` and `RateLimit` for a refused publish.
    func headers(retryAfter seconds: Int) -> [(String, String)] {
        [
            ("Retry-After", String(seconds)),
            ("RateLimit-Policy", #""publish";q=\#(perMinute);w=60"#),
            ("RateLimit", #""publish";r=0;t=\#(seconds)"#),
        ]
    }

    /// The bucket of `identity` publishing from `client`: its JWT subject, a static token, or the address.
    static func key(_ identity: ChannelIdentity, client: String) -> String {
        switch identity.credential {
        case .jwt(let subject): "sub:" + (subject ?? "")
        case .staticToken: "static"
        case .none, .unrecognized: "address:" + client
        }
    }
}
