import Testing

@testable import Spout

@Suite struct UpstreamErrorTests {
    static let url = "http://127.0.0.1:9/api/posts/1"
    static let target = UpstreamTarget(url: url, resource: "/posts/1")

    @Test(arguments: [
        (408, true), (429, true), (500, true), (502, true), (503, true), (504, true),
        (400, false), (401, false), (404, false), (501, false),
    ])
    func retryableStatuses(code: Int, retryable: Bool) {
        #expect(UpstreamError.status(Self.target, code: code, retryAfter: nil).isRetryable == retryable)
    }

    @Test func aSingleAttemptFailureKeepsItsPlainProblem() {
        let problem = UpstreamError.status(Self.target, code: 404, retryAfter: nil).problem
        #expect(problem.status == 502)
        #expect(problem.detail == "upstream /posts/1 answered 404")
        #expect(problem.extensions.map(\.name) == ["upstream", "upstreamStatus"])
    }

    @Test func gaveUpNamesTheAttemptsAndTheLastStatus() {
        let error = UpstreamError.gaveUp(attempts: 3, lastStatus: 503, error: .timeout(Self.target, seconds: 1))
        #expect(error.url == Self.url)
        #expect(error.attempts == 3)
        #expect(error.upstreamStatus == 503)
        #expect(error.underlying == .timeout(Self.target, seconds: 1))
        let problem = error.problem
        #expect(problem.status == 504)
        #expect(problem.type == Problem.Kind.upstreamTimeout)
        let detail = "did not answer within 1.0 s after 3 attempts (the last response was 503)"
        #expect(problem.detail == "upstream /posts/1 " + detail)
        #expect(error.logDescription == "upstream \(Self.url) " + detail)
        #expect(
            problem.extensions.elementsEqual(
                [("upstream", .string("/posts/1")), ("upstreamStatus", 503), ("attempts", 3)]) { $0 == $1 }
        )
    }

    @Test func gaveUpOnAStatusIsA502WithThatStatus() {
        let last = UpstreamError.status(Self.target, code: 502, retryAfter: nil)
        let error = UpstreamError.gaveUp(attempts: 2, lastStatus: 502, error: last)
        #expect(error.description == "upstream /posts/1 answered 502 after 2 attempts")
        #expect(error.logDescription == "upstream \(Self.url) answered 502 after 2 attempts")
        #expect(error.problem.status == 502)
        #expect(error.problem.type == Problem.Kind.upstreamFailed)
        #expect(error != last)
    }
}

@Suite struct UpstreamMetricsTests {
    @Test func upstreamMetricsAreExposed() {
        let metrics = SpoutMetrics()
        metrics.upstreamCache.increment([CacheLookup.coalesced.rawValue])
        metrics.upstreamRequests.increment([UpstreamOutcome.timeout.rawValue])
        metrics.upstreamInFlight.add(1)
        let text = metrics.registry.render()
        #expect(text.contains("spout_upstream_cache_total{result=\"coalesced\"} 1\n"))
        #expect(text.contains("spout_upstream_requests_total{outcome=\"timeout\"} 1\n"))
        #expect(text.contains("spout_upstream_retries_total 0\n"))
        #expect(text.contains("spout_upstream_in_flight 1\n"))
        #expect(text.contains("# TYPE spout_upstream_request_duration_seconds histogram\n"))
    }
}
