import Dispatch
import Foundation
import Reactive
import Synchronization
import TestSupport
import Testing

@testable import Spout

/// An upstream that misbehaves with its body — sends one without end, sends far too much, or drips it
/// a byte at a time — gets an answer within the deadline, and the service keeps answering `/health`
/// while it lasts: real sockets, the system's libcurl, the service's own routes.
///
/// The bound on each `/health` is generous (1 s, where the benchmark `bench/upstream_faults.sh` measures
/// the real figure, a few milliseconds), so the tests say whether the loops stay free, not how fast a
/// loaded CI machine is.
@Suite(.offPool) struct UpstreamFaultTests {
    /// The body limit the tests configure; small, so the faults cross it at once.
    static let maxBodyBytes = 256 * 1024
    /// The attempt time limit and the deadline the tests configure (seconds).
    static let attemptTimeout = 1.0
    static let deadline = 1.5
    /// How late after the deadline an answer may come on a loaded machine.
    static let slack = 1.5

    /// What happens during one fault: the article answer and every `/health` taken meanwhile.
    struct Observation {
        /// The answer's status and body, if one came.
        var article: (status: Int, body: [UInt8])?
        var articleSeconds: Double
        var healthSeconds: [Double]
        var healthFailures: [String]
    }

    static func server(_ fixture: UpstreamFixture) throws -> SpoutTestServer {
        try RouteTest.server(upstream: fixture, attemptTimeoutSeconds: attemptTimeout) { configuration in
            configuration.upstream.deadlineSeconds = deadline
            configuration.upstream.maxBodyBytes = maxBodyBytes
        }
    }

    /// Requests `path` on a thread of its own and meanwhile `/health` over and over (each on a new
    /// connection): until the answer came and the fixture saw the request's connection go — libcurl may
    /// read a runaway body for a while after the answer, and that is when a blocked loop would show —
    /// and at least five times; at most 2,000 times or 60 s.
    static func observe(_ server: SpoutTestServer, _ fixture: UpstreamFixture, _ path: String) -> Observation {
        let done = TestSignal()
        let answer = TestBox<((status: Int, body: [UInt8])?, Double)?>(nil)
        let port = server.port
        Thread.detachNewThread {
            let start = DispatchTime.now().uptimeNanoseconds
            let response = try? {
                let client = try LoopbackClient(port: port)
                defer { client.close() }
                try client.sendGet(path)
                let response = try client.readResponse(timeout: .seconds(30))
                return (status: response.status, body: response.body)
            }()
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            answer.update { $0 = (response, seconds) }
            done.signal()
        }
        var health: [Double] = []
        var failures: [String] = []
        let giveUp = DispatchTime.now().uptimeNanoseconds + 60_000_000_000
        for _ in 0..<2_000 {
            let finished = answer.value != nil && fixture.snapshot.inFlight == 0
            if (finished && health.count >= 5) || DispatchTime.now().uptimeNanoseconds > giveUp { break }
            let start = DispatchTime.now().uptimeNanoseconds
            do {
                let response = try server.get("/health", timeout: .seconds(5))
                if response.status != 200 { failures.append("status \(response.status)") }
            } catch {
                failures.append("\(error)")
            }
            health.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
        }
        if answer.value == nil { _ = done.wait(timeout: .seconds(30)) }
        let (response, seconds) = answer.value ?? (nil, 0)
        return Observation(article: response, articleSeconds: seconds, healthSeconds: health, healthFailures: failures)
    }

    static func expectHealthServedThroughout(_ observed: Observation) {
        #expect(!observed.healthSeconds.isEmpty, "no /health request was made during the fault")
        #expect(observed.healthFailures.isEmpty, "\(observed.healthFailures)")
        let slowest = observed.healthSeconds.max() ?? 0
        #expect(slowest < 1, "the slowest /health of \(observed.healthSeconds.count) took \(slowest) s")
    }

    /// Checks the answer is a `502` problem naming the limit, in time, with `/health` served throughout;
    /// returns the problem.
    static func expectBodyOverTheLimit(_ observed: Observation) throws -> [String: Any] {
        let response = try #require(observed.article)
        #expect(response.status == 502)
        #expect(observed.articleSeconds < deadline + slack, "answered after \(observed.articleSeconds) s")
        expectHealthServedThroughout(observed)
        let problem = RouteTest.object(response.body)
        #expect(problem["limit"] as? Int == maxBodyBytes)
        return problem
    }

    @Test func anEndlessBodyIsCutAtTheLimitWithA502AndHealthAnswersThroughout() async throws {
        let fixture = try UpstreamFixture { _ in .endless(limit: 1 << 30) }
        defer { fixture.stop() }
        let server = try Self.server(fixture)
        let problem = try Self.expectBodyOverTheLimit(Self.observe(server, fixture, "/articles/1"))
        #expect((problem["detail"] as? String)?.contains("\(Self.maxBodyBytes) bytes") == true, "\(problem)")
        // The client stopped reading, long before the fixture's own bound (what libcurl read meanwhile is
        // dropped as it arrives; bench/upstream_faults.sh measures the memory).
        #expect(await fixture.waitUntil(timeout: .seconds(30)) { $0.inFlight == 0 })
        #expect(fixture.snapshot.bodyBytesSent < 1 << 30, "\(fixture.snapshot.bodyBytesSent) bytes went out")
        #expect(server.isHealthy())
        await server.stop()
    }

    @Test func aHugeBodyIsRefusedByItsContentLengthWithA502() async throws {
        let fixture = try UpstreamFixture { _ in .large(bytes: 10 << 20) }
        defer { fixture.stop() }
        let server = try Self.server(fixture)
        let problem = try Self.expectBodyOverTheLimit(Self.observe(server, fixture, "/articles/1"))
        #expect((problem["detail"] as? String)?.contains("10485760") == true, "the declared length: \(problem)")
        #expect(server.isHealthy())
        await server.stop()
    }

    @Test func aBodyOfOneBytePerTickMeetsTheDeadlineWithA504() async throws {
        let post = #"{"userId":1,"id":1,"title":"t","body":"b"}"#
        let fixture = try UpstreamFixture { _ in .trickle(body: post, interval: .milliseconds(200)) }
        defer { fixture.stop() }
        let server = try Self.server(fixture)
        let observed = Self.observe(server, fixture, "/articles/1")
        let response = try #require(observed.article)
        #expect(response.status == 504)
        #expect(observed.articleSeconds < Self.deadline + Self.slack, "answered after \(observed.articleSeconds) s")
        Self.expectHealthServedThroughout(observed)
        #expect(await fixture.waitUntil(timeout: .seconds(10)) { $0.inFlight == 0 })
        #expect(server.isHealthy())
        await server.stop()
    }

    /// A route subscribes on its event loop, a client that leaves is noticed on it, and a deadline fires
    /// on a timer: each only hands the upstream driver a command, and each closes the upstream connection
    /// of the transfer it ends.
    @Test func aClientLeavingAndADeadlineBothCloseTheUpstreamConnection() async throws {
        let post = #"{"userId":1,"id":1,"title":"t","body":"b"}"#
        let fixture = try UpstreamFixture { request in request.path == "/posts/1" ? .json(post) : .hang }
        defer { fixture.stop() }
        let server = try Self.server(fixture)

        // An answer.
        #expect(try server.get("/articles/1").status == 200)
        // A client that leaves while its upstream call hangs.
        let leaving = try server.connect()
        try leaving.sendGet("/articles/2")
        #expect(await fixture.waitUntil { $0.requests(to: "/posts/2") == 1 })
        leaving.close()
        #expect(await fixture.waitUntil(timeout: .seconds(5)) { $0.inFlight == 0 }, "the client's leaving closed it")
        // A deadline.
        #expect(try server.get("/articles/3", timeout: .seconds(30)).status == 504)
        #expect(await fixture.waitUntil(timeout: .seconds(5)) { $0.inFlight == 0 }, "the deadline closed it")
        #expect(try UpstreamCrowdTests.openTransfers(server) == 0)
        #expect(server.isHealthy())
        await server.stop()
    }

    /// An upstream that asks to be called in a minute, past the deadline: answered at once with `503`, the
    /// upstream's wait as `Retry-After`, and no second call.
    @Test func aRetryAfterPastTheDeadlineIsA503CarryingIt() async throws {
        let fixture = try UpstreamFixture { _ in .status(429, headers: ["Retry-After": "60"]) }
        defer { fixture.stop() }
        let server = try RouteTest.server(upstream: fixture, attemptTimeoutSeconds: 5) { configuration in
            configuration.upstream.attempts = 3
            configuration.upstream.deadlineSeconds = 10
        }
        let response = try server.get("/articles/1")
        #expect(response.status == 503)
        #expect(response.header("Retry-After") == "60")
        let problem = RouteTest.object(response.body)
        #expect(problem["type"] as? String == Problem.Kind.upstreamUnavailable)
        #expect(problem["retryAfter"] as? Int == 60)
        #expect(problem["upstreamStatus"] as? Int == 429)
        #expect(fixture.snapshot.requests(to: "/posts/1") == 1, "the upstream was called again before its time")
        await server.stop()
    }
}
