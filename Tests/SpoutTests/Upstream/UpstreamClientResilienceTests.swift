import Dispatch
import Foundation
import Reactive
import Synchronization
import TestSupport
import Testing

@testable import Spout

/// The outbound client against the scripted loopback upstream with injected faults: retries,
/// deadlines, `Retry-After`, bad bodies, resets, the cache and cancellation, with the metrics.
@Suite(.offPool) struct UpstreamClientResilienceTests {
    static let post = #"{"userId":1,"id":1,"title":"t","body":"b"}"#

    /// Tiny backoff so the suite stays fast; timeouts long by default (a loaded machine must not turn a
    /// quick answer into a timeout), short only where a test is about them. The suite runs `.offPool`:
    /// a test resumes on its own thread, so no blocking test elsewhere keeps it from opening a gate or
    /// advancing a virtual clock before a real attempt timeout.
    static func configuration(
        attempts: Int = 3,
        attemptTimeout: Double = 30,
        deadline: Double = 60,
        ttl: Double = 30,
        maxDelayMilliseconds: Int = 5
    ) -> SpoutConfiguration.Upstream {
        var configuration = SpoutConfiguration.Upstream()
        configuration.attempts = attempts
        configuration.baseDelayMilliseconds = 1
        configuration.maxDelayMilliseconds = maxDelayMilliseconds
        configuration.attemptTimeoutSeconds = attemptTimeout
        configuration.deadlineSeconds = deadline
        configuration.cacheTTLSeconds = ttl
        return configuration
    }

    static func client(
        _ fixture: UpstreamFixture,
        _ configuration: SpoutConfiguration.Upstream = configuration(),
        metrics: SpoutMetrics? = nil,
        backoff: VirtualTimeScheduler? = nil,
        clock: VirtualTimeScheduler? = nil
    ) -> UpstreamClient {
        var cacheClock = ResponseCache<Data, UpstreamError>.uptime
        if let clock {
            cacheClock = { clock.now.nanoseconds }
        }
        if let backoff {
            return UpstreamClient(
                configuration: configuration,
                baseURL: fixture.baseURL,
                metrics: metrics,
                backoffScheduler: backoff,
                cacheClock: cacheClock
            )
        }
        return UpstreamClient(
            configuration: configuration,
            baseURL: fixture.baseURL,
            metrics: metrics,
            backoffScheduler: DispatchQueue.global(),
            cacheClock: cacheClock
        )
    }

    // MARK: Retries

    @Test func a500ThenA200IsRetriedAndSucceeds() async throws {
        let fixture = try UpstreamFixture { $0.attempt == 1 ? .status(500) : .json(Self.post) }
        defer { fixture.stop() }
        let metrics = SpoutMetrics()
        let result = await Self.client(fixture, metrics: metrics).get(Post.self, "/posts/1").firstResult()
        #expect(try result.get().id == 1)
        #expect(fixture.snapshot.requests(to: "/posts/1") == 2)
        #expect(metrics.upstreamRetries.value() == 1)
        #expect(metrics.upstreamRequests.value(["status"]) == 1)
        #expect(metrics.upstreamRequests.value(["ok"]) == 1)
        #expect(metrics.upstreamDuration.count() == 2)
        #expect(metrics.upstreamInFlight.value == 0)
    }

    @Test func persistentFailureSaysWhatWasTried() async throws {
        let fixture = try UpstreamFixture { _ in .status(503) }
        defer { fixture.stop() }
        let client = Self.client(fixture)
        let result = await client.get(Post.self, "/posts/1").firstResult()
        let url = fixture.baseURL.absoluteString + "/posts/1"
        let last = UpstreamError.status(UpstreamTarget(url: url, resource: "/posts/1"), code: 503, retryAfter: nil)
        #expect(result.failure == .gaveUp(attempts: 3, lastStatus: 503, error: last))
        #expect(fixture.snapshot.requests(to: "/posts/1") == 3)
        let problem = try #require(result.failure?.problem)
        #expect(problem.status == 502)
        #expect(problem.detail == "upstream /posts/1 answered 503 after 3 attempts")
        #expect(result.failure?.logDescription == "upstream \(url) answered 503 after 3 attempts")
        #expect(problem.extensions.contains { $0 == ("upstreamStatus", 503) })
        #expect(problem.extensions.contains { $0 == ("attempts", 3) })
    }

    @Test func notFoundIsNotRetried() async throws {
        let fixture = try UpstreamFixture { _ in .status(404) }
        defer { fixture.stop() }
        let result = await Self.client(fixture).get(Post.self, "/posts/999").firstResult()
        #expect(result.failure?.upstreamStatus == 404)
        #expect(result.failure?.attempts == 1)
        #expect(fixture.snapshot.requests(to: "/posts/999") == 1)
    }

    @Test func connectionRefusedIsRetriedThenReportedAs502() async throws {
        let fixture = try UpstreamFixture { _ in .json("{}") }
        let base = fixture.baseURL
        await fixture.stopAndWait()
        let metrics = SpoutMetrics()
        let client = UpstreamClient(
            configuration: Self.configuration(),
            baseURL: base,
            metrics: metrics,
            backoffScheduler: DispatchQueue.global(),
            cacheClock: ResponseCache<Data, UpstreamError>.uptime
        )
        let result = await client.get(Post.self, "/posts/1").firstResult()
        guard case .gaveUp(3, nil, .unreachable(_, let reason))? = result.failure else {
            Issue.record("expected three refused attempts, got \(result)")
            return
        }
        #expect(reason == "connection refused")
        #expect(result.failure?.problem.status == 502)
        #expect(metrics.upstreamRequests.value(["unreachable"]) == 3)
        #expect(metrics.upstreamRetries.value() == 2)
    }

    @Test func resetMidBodyIsRetried() async throws {
        let fixture = try UpstreamFixture { request in
            request.attempt == 1 ? .resetMidBody(partial: #"{"userId":1,"#) : .json(Self.post)
        }
        defer { fixture.stop() }
        let metrics = SpoutMetrics()
        let result = await Self.client(fixture, metrics: metrics).get(Post.self, "/posts/1").firstResult()
        #expect(try result.get().id == 1)
        #expect(fixture.snapshot.requests(to: "/posts/1") == 2)
        #expect(metrics.upstreamRequests.value(["unreachable"]) == 1)
    }

    @Test func malformedJSONIsABadBodyNeitherRetriedNorCached() async throws {
        let fixture = try UpstreamFixture { _ in .json(#"{"userId":"#) }
        defer { fixture.stop() }
        let client = Self.client(fixture)
        let first = await client.get(Post.self, "/posts/1").firstResult()
        guard case .badBody(_, let reason)? = first.failure else {
            Issue.record("expected a bad body, got \(first)")
            return
        }
        #expect(reason.contains("malformed JSON"))
        #expect(first.failure?.problem.status == 502)
        #expect(fixture.snapshot.requests(to: "/posts/1") == 1)
        _ = await client.get(Post.self, "/posts/1").firstResult()
        #expect(fixture.snapshot.requests(to: "/posts/1") == 2)
    }

    // MARK: Retry-After

    @Test func retryAfterIsHonouredOnTheBackoffClock() async throws {
        let fixture = try UpstreamFixture { request in
            request.attempt == 1 ? .status(429, headers: ["Retry-After": "2"]) : .json(Self.post)
        }
        defer { fixture.stop() }
        let backoff = VirtualTimeScheduler()
        let metrics = SpoutMetrics()
        let configuration = Self.configuration(maxDelayMilliseconds: 10_000)
        let client = Self.client(fixture, configuration, metrics: metrics, backoff: backoff)
        let result = Task { await client.get(Post.self, "/posts/1").firstResult() }

        // The 429 arrived and the retry is waiting on the virtual clock.
        #expect(await waitUntil { backoff.pendingActionCount == 1 })
        backoff.advance(by: .milliseconds(1_999))
        #expect(metrics.upstreamRetries.value() == 0)
        backoff.advance(by: .milliseconds(1))
        #expect(metrics.upstreamRetries.value() == 1)
        #expect(try await result.value.get().id == 1)
        #expect(fixture.snapshot.requests(to: "/posts/1") == 2)
    }

    @Test func retryAfterBeyondTheDeadlineFailsAtOnceWithTheUpstreamAnswer() async throws {
        let fixture = try UpstreamFixture { _ in .status(429, headers: ["Retry-After": "60"]) }
        defer { fixture.stop() }
        let configuration = Self.configuration(deadline: 5, maxDelayMilliseconds: 120_000)
        let result = await Self.client(fixture, configuration).get(Post.self, "/posts/1").firstResult()
        let url = fixture.baseURL.absoluteString + "/posts/1"
        let target = UpstreamTarget(url: url, resource: "/posts/1")
        #expect(result.failure == .status(target, code: 429, retryAfter: .seconds(60)))
        let problem = try #require(result.failure?.problem)
        #expect(problem.status == 503)
        #expect(problem.type == Problem.Kind.upstreamUnavailable)
        #expect(result.failure?.retryAfterSeconds == 60)
        #expect(fixture.snapshot.requests(to: "/posts/1") == 1)
    }

    /// A `Retry-After` longer than the backoff's cap (2 s here) is still waited in full: the upstream is not
    /// called before the 5 s it asked for.
    @Test func retryAfterBeyondTheBackoffCapIsWaitedInFull() async throws {
        let fixture = try UpstreamFixture { request in
            request.attempt == 1 ? .status(503, headers: ["Retry-After": "5"]) : .json(Self.post)
        }
        defer { fixture.stop() }
        let backoff = VirtualTimeScheduler()
        let metrics = SpoutMetrics()
        let configuration = Self.configuration(deadline: 30, maxDelayMilliseconds: 2_000)
        let client = Self.client(fixture, configuration, metrics: metrics, backoff: backoff)
        let result = Task { await client.get(Post.self, "/posts/1").firstResult() }

        #expect(await waitUntil { backoff.pendingActionCount == 1 })
        backoff.advance(by: .milliseconds(4_999))
        #expect(metrics.upstreamRetries.value() == 0, "called again before the Retry-After")
        backoff.advance(by: .milliseconds(1))
        #expect(metrics.upstreamRetries.value() == 1)
        #expect(try await result.value.get().id == 1)
        #expect(fixture.snapshot.requests(to: "/posts/1") == 2)
    }

    // MARK: Deadlines

    @Test func aHangingUpstreamEndsAtTheDeadlineWith504AndIsCancelled() async throws {
        let fixture = try UpstreamFixture { _ in .hang }
        defer { fixture.stop() }
        let metrics = SpoutMetrics()
        let configuration = Self.configuration(attempts: 5, attemptTimeout: 30, deadline: 0.5)
        let result = await Self.client(fixture, configuration, metrics: metrics).get(Post.self, "/slow").firstResult()
        let url = fixture.baseURL.absoluteString + "/slow"
        #expect(result.failure == .timeout(UpstreamTarget(url: url, resource: "/slow"), seconds: 0.5))
        #expect(result.failure?.problem.status == 504)
        #expect(await fixture.waitUntil { $0.inFlight == 0 })
        #expect(metrics.upstreamInFlight.value == 0)
        #expect(metrics.upstreamRequests.value(["cancelled"]) == 1)
    }

    @Test func slowAttemptsTimeOutAndAreRetriedWithinTheDeadline() async throws {
        let fixture = try UpstreamFixture { request in
            request.attempt == 1 ? .delayed(.seconds(30), .json(Self.post)) : .json(Self.post)
        }
        defer { fixture.stop() }
        let metrics = SpoutMetrics()
        // Later attempts answer at once, but a loaded machine may still let one pass 0.5 s: count
        // the timeouts rather than assume there was exactly one.
        let configuration = Self.configuration(attempts: 5, attemptTimeout: 0.5, deadline: 60)
        let client = Self.client(fixture, configuration, metrics: metrics)
        let result = await client.get(Post.self, "/posts/1").firstResult()
        #expect(try result.get().id == 1)
        let timeouts = metrics.upstreamRequests.value(["timeout"])
        #expect(timeouts >= 1)
        #expect(fixture.snapshot.requests(to: "/posts/1") == timeouts + 1)
        #expect(metrics.upstreamRetries.value() == timeouts)
        #expect(await fixture.waitUntil { $0.inFlight == 0 })
    }

    @Test func attemptsThatAllTimeOutAreA504SayingHowManyWereMade() async throws {
        let fixture = try UpstreamFixture { _ in .hang }
        defer { fixture.stop() }
        let configuration = Self.configuration(attempts: 2, attemptTimeout: 0.2, deadline: 5)
        let result = await Self.client(fixture, configuration).get(Post.self, "/slow").firstResult()
        let url = fixture.baseURL.absoluteString + "/slow"
        let timeout = UpstreamError.timeout(UpstreamTarget(url: url, resource: "/slow"), seconds: 0.2)
        #expect(result.failure == .gaveUp(attempts: 2, lastStatus: nil, error: timeout))
        let problem = try #require(result.failure?.problem)
        #expect(problem.status == 504)
        #expect(problem.detail == "upstream /slow did not answer within 0.2 s after 2 attempts")
        #expect(await fixture.waitUntil { $0.inFlight == 0 })
    }

    // MARK: Cache

    @Test func aCachedBodyIsServedUntilItExpiresOnAVirtualClock() async throws {
        let fixture = try UpstreamFixture { _ in .json(Self.post) }
        defer { fixture.stop() }
        let clock = VirtualTimeScheduler()
        let metrics = SpoutMetrics()
        let client = Self.client(fixture, Self.configuration(ttl: 30), metrics: metrics, clock: clock)
        #expect(try await client.get(Post.self, "/posts/1").firstResult().get().id == 1)
        #expect(try await client.get(Post.self, "/posts/1").firstResult().get().id == 1)
        #expect(fixture.snapshot.requests(to: "/posts/1") == 1)
        clock.advance(by: .seconds(30))
        #expect(try await client.get(Post.self, "/posts/1").firstResult().get().id == 1)
        #expect(fixture.snapshot.requests(to: "/posts/1") == 2)
        #expect(metrics.upstreamCache.value(["hit"]) == 1)
        #expect(metrics.upstreamCache.value(["miss"]) == 2)
    }

    @Test func withStaleSecondsAnExpiredBodyIsServedWhileOneRefreshRuns() async throws {
        let fixture = try UpstreamFixture { request in
            .json(#"{"userId":1,"id":\#(request.attempt),"title":"t","body":"b"}"#)
        }
        defer { fixture.stop() }
        let clock = VirtualTimeScheduler()
        let metrics = SpoutMetrics()
        var configuration = Self.configuration(ttl: 30)
        configuration.cacheStaleSeconds = 60
        let client = Self.client(fixture, configuration, metrics: metrics, clock: clock)
        #expect(try await client.get(Post.self, "/posts/1").firstResult().get().id == 1)
        clock.advance(by: .seconds(45))  // expired, within the stale window
        #expect(try await client.get(Post.self, "/posts/1").firstResult().get().id == 1)
        #expect(await fixture.waitUntil { $0.requests(to: "/posts/1") == 2 && $0.inFlight == 0 })
        #expect(await waitUntil { client.cache.inFlightCount == 0 })
        #expect(try await client.get(Post.self, "/posts/1").firstResult().get().id == 2)
        #expect(metrics.upstreamCache.value(["stale"]) == 1)
        #expect(metrics.upstreamCache.value(["hit"]) == 1)
    }

    @Test func hundredConcurrentMissesMakeOneUpstreamRequest() async throws {
        let fixture = try UpstreamFixture { _ in .json(Self.post) }
        defer { fixture.stop() }
        let metrics = SpoutMetrics()
        let client = Self.client(fixture, metrics: metrics)
        // All 100 subscribe before any asks for the value, so all are misses of one key at once.
        let subscribers = (0..<100).map { _ in
            let subscriber = TrackingSubscriber<Post, UpstreamError>(initialDemand: nil)
            client.get(Post.self, "/posts/1").subscribe(subscriber)
            return subscriber
        }
        for subscriber in subscribers { subscriber.request(.unlimited) }
        let done = await waitUntil { subscribers.allSatisfy { $0.completion != nil } }
        #expect(done)
        #expect(subscribers.allSatisfy { $0.values.map(\.id) == [1] })
        #expect(fixture.snapshot.requests(to: "/posts/1") == 1)
        #expect(metrics.upstreamCache.value(["miss"]) == 1)
        #expect(metrics.upstreamCache.value(["coalesced"]) == 99)
    }

    // MARK: Cancellation

    @Test func cancellingTheOnlySubscriberCancelsTheURLSessionTask() async throws {
        let fixture = try UpstreamFixture { _ in .hang }
        defer { fixture.stop() }
        let metrics = SpoutMetrics()
        let client = Self.client(fixture, metrics: metrics)
        let subscriber = TrackingSubscriber<Post, UpstreamError>()
        client.get(Post.self, "/slow").subscribe(subscriber)
        #expect(await fixture.waitUntil { $0.inFlight == 1 })
        #expect(metrics.upstreamInFlight.value == 1)
        subscriber.cancel()
        #expect(await fixture.waitUntil { $0.inFlight == 0 })
        #expect(metrics.upstreamInFlight.value == 0)
        #expect(metrics.upstreamRequests.value(["cancelled"]) == 1)
        #expect(client.cache.inFlightCount == 0)
        #expect(subscriber.history.count == 1)  // the subscription, nothing after the cancel
    }

    @Test func cancellingOneOfTwoSharedSubscribersKeepsTheRequestForTheOther() async throws {
        let gate = UpstreamFixture.Gate()
        let fixture = try UpstreamFixture { _ in .awaiting(gate, .json(Self.post)) }
        defer { fixture.stop() }
        let client = Self.client(fixture)
        let leaving = TrackingSubscriber<Post, UpstreamError>()
        let staying = TrackingSubscriber<Post, UpstreamError>()
        client.get(Post.self, "/posts/1").subscribe(leaving)
        client.get(Post.self, "/posts/1").subscribe(staying)
        #expect(await fixture.waitUntil { $0.inFlight == 1 })
        leaving.cancel()
        gate.open()
        #expect(await waitUntil { staying.completion != nil })
        #expect(staying.values.map(\.id) == [1])
        #expect(leaving.history.count == 1)
        #expect(fixture.snapshot.requests(to: "/posts/1") == 1)
    }
}

/// Waits until `condition` holds, for at most `timeout`; for states that signal nothing. It checks
/// every 2 ms, suspended in between: a loop of `Task.yield()` would keep the cooperative pool's few
/// threads (two on CI) busy and starve the very tasks it waits for. `timeout` is scaled by `TestTiming`.
func waitUntil(timeout: Duration = .seconds(60), _ condition: () -> Bool) async -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: TestTiming.scaled(timeout))
    while !condition() {
        if clock.now >= deadline { return false }
        try? await Task.sleep(for: .milliseconds(2))
    }
    return true
}
