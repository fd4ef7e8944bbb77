import Foundation
import TestSupport
import Testing

@testable import Spout

/// The publish token bucket per client, on its own clock and over loopback.
@Suite struct PublishRateLimiterTests {
    @Test func aBucketHoldsTheBurstAndRefillsAtTheRate() {
        let limiter = PublishRateLimiter(perMinute: 60, burst: 3)
        #expect(limiter.take("a", now: 100) == nil)
        #expect(limiter.take("a", now: 100) == nil)
        #expect(limiter.take("a", now: 100) == nil)
        #expect(limiter.take("a", now: 100) == 1)
        // Another client has its own bucket.
        #expect(limiter.take("b", now: 100) == nil)
        // One per second comes back, never more than the burst.
        #expect(limiter.take("a", now: 101) == nil)
        #expect(limiter.take("a", now: 101) == 1)
        #expect(limiter.take("a", now: 1_000) == nil)
        #expect(limiter.take("a", now: 1_000) == nil)
        #expect(limiter.take("a", now: 1_000) == nil)
        #expect(limiter.take("a", now: 1_000) == 1)
        // A slow rate says how long to wait.
        let slow = PublishRateLimiter(perMinute: 2, burst: 1)
        #expect(slow.take("c", now: 0) == nil)
        #expect(slow.take("c", now: 0) == 30)
        #expect(slow.headers(retryAfter: 30).map(\.1) == ["30", #""publish";q=2;w=60"#, #""publish";r=0;t=30"#])
    }

    @Test func anAllowedPublishSaysWhatIsLeftAndWhenTheBucketIsFull() {
        let limiter = PublishRateLimiter(perMinute: 60, burst: 3)
        #expect(limiter.decide("a", now: 100) == .allowed(remaining: 2, fullInSeconds: 1))
        #expect(limiter.decide("a", now: 100) == .allowed(remaining: 1, fullInSeconds: 2))
        #expect(limiter.decide("a", now: 100) == .allowed(remaining: 0, fullInSeconds: 3))
        #expect(limiter.decide("a", now: 100) == .refused(retryAfter: 1))
        #expect(
            limiter.headers(remaining: 2, fullInSeconds: 1).map(\.1) == [
                #""publish";q=60;w=60"#, #""publish";r=2;t=1"#,
            ]
        )
    }

    @Test func clientsAreKeyedBySubjectTokenOrAddress() {
        let jwt = ChannelIdentity(credential: .jwt(subject: "svc"), publish: .all, subscribe: .all)
        let anonymous = ChannelIdentity(credential: .none, publish: .all, subscribe: .all)
        #expect(PublishRateLimiter.key(jwt, client: "10.0.0.1") == "sub:svc")
        #expect(PublishRateLimiter.key(anonymous, client: "10.0.0.1") == "address:10.0.0.1")
    }
}

@Suite(.offPool) struct PublishRateLimitHTTPTests {
    @Test func pastTheBurstAPublishIs429WithRateLimitFields() async throws {
        let server = try SpoutTestServer {
            $0.channels.publishRatePerMinute = 1
            $0.channels.publishBurst = 2
        }
        let http = try ChannelHTTP(port: server.port)
        defer { http.close() }
        // An allowed publish says what is left too: one of two, the bucket full again in a minute; then none.
        let first = try http.publish("q", channelBody([1]))
        #expect(first.status == 202)
        #expect(first.header("RateLimit-Policy") == #""publish";q=1;w=60"#)
        #expect(first.header("RateLimit") == #""publish";r=1;t=60"#)
        #expect(first.header("Retry-After") == nil)
        let second = try http.publish("q", channelBody([2]))
        #expect(second.status == 202)
        #expect(second.header("RateLimit") == #""publish";r=0;t=120"#)
        let refused = try http.publish("q", channelBody([3]))
        #expect(refused.status == 429)
        #expect(refused.text.contains("/problems/rate-limited"))
        #expect(Int(refused.header("Retry-After") ?? "") ?? 0 >= 59)
        #expect(refused.header("RateLimit-Policy") == #""publish";q=1;w=60"#)
        #expect(refused.header("RateLimit")?.hasPrefix(#""publish";r=0;t="#) == true)
        let metrics = try server.get("/metrics")
        #expect(metrics.text.contains("spout_channel_publishes_rate_limited_total 1"))
        // Only two events went in.
        #expect(try server.channelList()["q"]?.historyEvents == 2)
        await server.stop()
    }
}
