import Foundation
import Reactive
import TestSupport
import Testing

@testable import Spout

/// Per-call request header fields (the correlation fields a route forwards), the body limit through
/// the client, and the configuration key behind it.
@Suite(.offPool) struct UpstreamClientForwardingTests {
    static let post = #"{"userId":1,"id":1,"title":"t","body":"b"}"#

    static func value(_ name: String, in fields: [(name: String, value: String)]) -> String? {
        fields.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    @Test func headersGivenToTheClientReachTheUpstream() async throws {
        let fixture = try UpstreamFixture { _ in .json(Self.post) }
        defer { fixture.stop() }
        let client = UpstreamClientResilienceTests.client(fixture)
        let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        let headers = ["X-Request-ID": "abc-123", "traceparent": traceparent, "tracestate": "spout=1"]
        let result = await client.get(Post.self, "/posts/1", headers: headers).firstResult()
        #expect(try result.get().id == 1)
        let fields = try #require(fixture.snapshot.headers.first)
        #expect(Self.value("X-Request-ID", in: fields) == "abc-123")
        #expect(Self.value("traceparent", in: fields) == traceparent)
        #expect(Self.value("tracestate", in: fields) == "spout=1")
        #expect(Self.value("Accept", in: fields) == "application/json")
    }

    @Test func fieldsThatCouldSmuggleAnotherFieldAreDropped() async throws {
        let fixture = try UpstreamFixture { _ in .json(Self.post) }
        defer { fixture.stop() }
        let client = UpstreamClientResilienceTests.client(fixture)
        let headers = [
            "X-Request-ID": "ok",
            "X-Evil": "a\r\nX-Injected: yes",
            "Bad Name": "v",
            "X-Nul": "a\u{0}b",
        ]
        _ = await client.get(Post.self, "/posts/1", headers: headers).firstResult()
        let fields = try #require(fixture.snapshot.headers.first)
        #expect(Self.value("X-Request-ID", in: fields) == "ok")
        #expect(Self.value("X-Injected", in: fields) == nil)
        #expect(Self.value("X-Evil", in: fields) == nil)
        #expect(Self.value("X-Nul", in: fields) == nil)
        #expect(!fields.contains { $0.name.contains(" ") })
        #expect(UpstreamClient.forwardable(headers) == ["X-Request-ID": "ok"])
    }

    /// Concurrent calls for one URL share one fetch: it carries the headers of the call that started
    /// it, and the others' are not sent (documented on `UpstreamClient.get(_:query:headers:)`).
    @Test func aSharedFetchCarriesTheHeadersOfTheCallThatStartedIt() async throws {
        let gate = UpstreamFixture.Gate()
        let fixture = try UpstreamFixture { _ in .awaiting(gate, .json(Self.post)) }
        defer { fixture.stop() }
        let client = UpstreamClientResilienceTests.client(fixture)
        let first = TrackingSubscriber<Post, UpstreamError>()
        let second = TrackingSubscriber<Post, UpstreamError>()
        client.get(Post.self, "/posts/1", headers: ["X-Request-ID": "first"]).subscribe(first)
        #expect(await fixture.waitUntil { $0.inFlight == 1 })
        client.get(Post.self, "/posts/1", headers: ["X-Request-ID": "second"]).subscribe(second)
        gate.open()
        #expect(await waitUntil { first.completion != nil && second.completion != nil })
        #expect(first.values.map(\.id) == [1] && second.values.map(\.id) == [1])
        #expect(fixture.snapshot.total == 1)
        #expect(fixture.snapshot.headers.map { Self.value("X-Request-ID", in: $0) } == ["first"])
    }

    @Test func aBodyOverTheLimitIsA502ProblemNamingTheLimitAndItIsNotRetried() async throws {
        let fixture = try UpstreamFixture { request in
            request.path == "/declared" ? .large(bytes: 64 * 1024) : .endless(limit: 1 << 30)
        }
        defer { fixture.stop() }
        var configuration = UpstreamClientResilienceTests.configuration(attempts: 3)
        configuration.maxBodyBytes = 16 * 1024
        let client = UpstreamClientResilienceTests.client(fixture, configuration)
        for path in ["/declared", "/endless"] {
            let result = await client.get(Post.self, path).firstResult()
            guard case .tooLarge(let target, 16_384, let declared)? = result.failure else {
                Issue.record("\(path): expected a body over the limit, got \(result)")
                continue
            }
            #expect(target.resource == path)
            #expect(declared == (path == "/declared" ? 64 * 1024 : nil))
            let problem = try #require(result.failure?.problem)
            #expect(problem.status == 502)
            #expect(problem.extensions.contains { $0 == ("limit", 16_384) })
            #expect(problem.detail.contains("16384 bytes (upstream.maxBodyBytes)"), "\(problem.detail)")
            #expect(result.failure?.cause.error == "too_large")
        }
        #expect(fixture.snapshot.total == 2, "a body over the limit will not shrink: no retry")
    }

    @Test func theLimitIsAConfigurationKeyWithAnEnvironmentVariable() throws {
        #expect(SpoutConfiguration().upstream.maxBodyBytes == 4 * 1024 * 1024)
        let loaded = try SpoutConfiguration.load(arguments: [], environment: ["SPOUT_UPSTREAM_MAX_BODY_BYTES": "65536"])
        guard case .run(let configuration) = loaded else {
            Issue.record("expected a run command, got \(loaded)")
            return
        }
        #expect(configuration.upstream.maxBodyBytes == 65_536)
        for bad in ["0", "-1", "abc", "99999999999999999999"] {
            #expect(throws: ConfigError.self, "\(bad)") {
                try SpoutConfiguration.load(arguments: [], environment: ["SPOUT_UPSTREAM_MAX_BODY_BYTES": bad])
            }
        }
    }

    /// A large body released is followed, a moment later, by a return of free heap pages to the system.
    @Test func aLargeBodyIsFollowedByAMemoryReturn() async throws {
        let fixture = try UpstreamFixture { _ in .large(bytes: 2 << 20) }
        defer { fixture.stop() }
        var configuration = UpstreamClientResilienceTests.configuration(attempts: 1)
        configuration.maxBodyBytes = 4 << 20
        let before = MemoryReturn.shared.trimCount
        let result = await UpstreamClientResilienceTests.client(fixture, configuration).get("/big").firstResult()
        #expect(try result.get().count == 2 << 20)
        #expect(await waitUntil(timeout: .seconds(30)) { MemoryReturn.shared.trimCount > before })
    }
}

@Suite struct UpstreamTargetTests {
    @Test(arguments: [
        ("http://10.0.0.5:8080/api/posts/1", "http://10.0.0.5:8080/api", "/posts/1"),
        ("http://10.0.0.5:8080/api/posts?_page=2&_limit=10", "http://10.0.0.5:8080/api/", "/posts?_page=2&_limit=10"),
        ("http://127.0.0.1:8080/demo/users/1/todos", "http://127.0.0.1:8080/demo", "/users/1/todos"),
        ("http://h.example/posts/1", "http://h.example", "/posts/1"),
        // Not under the base (a prefix of a longer segment is not the base): the URL's own path.
        ("http://h.example/demonstration/x", "http://h.example/demo", "/demonstration/x"),
        ("http://other.example/x?y=1", "http://h.example", "/x?y=1"),
    ])
    func theResourceIsWhatFollowsTheBase(url: String, base: String, resource: String) throws {
        let target = UpstreamTarget(url: try #require(URL(string: url)), base: URL(string: base))
        #expect(target.url == url)
        #expect(target.resource == resource)
        #expect(target.description == resource)
    }

    @Test func theCauseForTheLogKeepsTheAddressTheProblemDoesNot() {
        let target = UpstreamTarget(url: "http://10.0.0.5:8080/api/posts/1", resource: "/posts/1")
        let error = UpstreamError.gaveUp(attempts: 3, lastStatus: 503, error: .timeout(target, seconds: 2))
        let problem = String(decoding: error.problem.jsonBytes, as: UTF8.self)
        #expect(!problem.contains("10.0.0.5") && problem.contains(#""upstream":"/posts/1""#), "\(problem)")
        let cause = error.cause
        #expect(cause.url == "http://10.0.0.5:8080/api/posts/1")
        #expect(cause.error == "timeout" && cause.attempts == 3 && cause.status == 503)
        #expect(cause.timeoutSeconds == 2)
        #expect(error.logDescription.contains("http://10.0.0.5:8080/api/posts/1"))
        var json: [UInt8] = []
        cause.appendJSON(to: &json)
        #expect(
            String(decoding: json, as: UTF8.self)
                == #"{"url":"http://10.0.0.5:8080/api/posts/1","error":"timeout","status":503,"attempts":3,"timeout_s":2.000}"#
        )
    }
}
