import EventLoops
import Foundation
import HTTPServer
import Reactive
import TestSupport
import Testing

@testable import Spout

/// The outbound client's plain path over a real loopback upstream: URLSession → HTTP → decode.
@Suite(.offPool) struct UpstreamClientBasicsTests {
    /// Serves `/posts/1` as JSON, `/bad` as malformed JSON, anything else as 500.
    private static func startUpstream() throws -> Server {
        try Server.start(
            configuration: Server.Configuration(host: "127.0.0.1", port: 0),
            group: EventLoopGroup(loopCount: 1)
        ) {
            request,
            responder in
            switch request.path {
            case "/api/posts/1":
                responder.respond(
                    headers: ["Content-Type": "application/json"],
                    body: #"{"userId":1,"id":1,"title":"t","body":"b","extra":true}"#
                )
            case "/api/bad":
                responder.respond(headers: ["Content-Type": "application/json"], body: #"{"userId":"#)
            default:
                responder.respond(status: Status(code: 500, reasonPhrase: "Internal Server Error"), body: "no")
            }
        }
    }

    private static func first<T: Sendable>(_ publisher: AnyPublisher<T, UpstreamError>) async -> Result<
        T, UpstreamError
    > {
        let box = TestBox<AnyCancellable?>(nil)
        return await withCheckedContinuation { continuation in
            let cancellable = publisher.sink(
                receiveCompletion: { completion in
                    if case .failure(let error) = completion { continuation.resume(returning: .failure(error)) }
                },
                receiveValue: { continuation.resume(returning: .success($0)) }
            )
            box.update { $0 = cancellable }
        }
    }

    @Test func decodesAJSONBodyFromALoopbackUpstream() async throws {
        let upstream = try Self.startUpstream()
        defer { Task { await upstream.shutdown(deadline: .seconds(1)) } }
        let client = UpstreamClient(
            configuration: SpoutConfiguration.Upstream(),
            baseURL: URL(string: "http://127.0.0.1:\(upstream.port)/api/")
        )
        let result = await Self.first(client.get(Post.self, "/posts/1"))
        #expect(try result.get() == Post(userId: 1, id: 1, title: "t", body: "b"))
    }

    @Test func theResponseCacheCountsBodyBytesAgainstCacheMaxBytes() async throws {
        let upstream = try Self.startUpstream()
        defer { Task { await upstream.shutdown(deadline: .seconds(1)) } }
        let body = #"{"userId":1,"id":1,"title":"t","body":"b","extra":true}"#.utf8.count
        var roomy = SpoutConfiguration.Upstream()
        roomy.cacheMaxBytes = body
        let metrics = SpoutMetrics()
        #expect(metrics.registry.render().contains("spout_upstream_cache_bytes 0\n"))
        let client = UpstreamClient(
            configuration: roomy,
            baseURL: URL(string: "http://127.0.0.1:\(upstream.port)/api/"),
            metrics: metrics
        )
        #expect((try? await Self.first(client.get(Post.self, "/posts/1")).get()) != nil)
        #expect(client.cache.count == 1)
        #expect(client.cache.totalCost == body)
        #expect(metrics.registry.render().contains("spout_upstream_cache_bytes \(body)\n"))

        var tight = SpoutConfiguration.Upstream()
        tight.cacheMaxBytes = body - 1
        let small = UpstreamClient(configuration: tight, baseURL: URL(string: "http://127.0.0.1:\(upstream.port)/api/"))
        #expect((try? await Self.first(small.get(Post.self, "/posts/1")).get()) != nil, "delivered though not stored")
        #expect(small.cache.count == 0)
        #expect(small.cache.totalCost == 0)
    }

    @Test func mapsStatusAndBodyFailuresIntoUpstreamError() async throws {
        let upstream = try Self.startUpstream()
        defer { Task { await upstream.shutdown(deadline: .seconds(1)) } }
        let base = "http://127.0.0.1:\(upstream.port)/api"
        let client = UpstreamClient(configuration: SpoutConfiguration.Upstream(), baseURL: URL(string: base))

        let status = await Self.first(client.get(Post.self, "/missing"))
        let missing = UpstreamError.status(
            UpstreamTarget(url: base + "/missing", resource: "/missing"),
            code: 500,
            retryAfter: nil
        )
        #expect(status.failure == .gaveUp(attempts: 3, lastStatus: 500, error: missing))

        let body = await Self.first(client.get(Post.self, "/bad"))
        guard case .badBody(let target, let reason)? = body.failure else {
            Issue.record("expected a bad body, got \(body)")
            return
        }
        #expect(target == UpstreamTarget(url: base + "/bad", resource: "/bad"))
        #expect(reason.contains("malformed JSON"))
    }

    @Test func refusedConnectionIsUnreachable() async throws {
        // Bind and close a listener to get a port nothing listens on.
        let upstream = try Self.startUpstream()
        let port = upstream.port
        await upstream.shutdown(deadline: .seconds(1))
        let client = UpstreamClient(
            configuration: SpoutConfiguration.Upstream(),
            baseURL: URL(string: "http://127.0.0.1:\(port)")
        )
        let result = await Self.first(client.get(Post.self, "/posts/1"))
        // Connection refused is retryable: three attempts by default, each refused.
        #expect(result.failure?.attempts == 3)
        guard case .unreachable(_, let reason)? = result.failure?.underlying else {
            Issue.record("expected unreachable, got \(result)")
            return
        }
        #expect(reason == "connection refused")
    }

    @Test func retryAfterParsesSecondsAndHTTPDates() {
        let now = Date(timeIntervalSince1970: 1_000_000_000)
        #expect(UpstreamError.retryAfter("3", now: now) == .seconds(3))
        #expect(UpstreamError.retryAfter("-1", now: now) == nil)
        #expect(UpstreamError.retryAfter("soon", now: now) == nil)
        // 1_000_000_000 is Sun, 09 Sep 2001 01:46:40 GMT.
        #expect(UpstreamError.retryAfter("Sun, 09 Sep 2001 01:46:45 GMT", now: now) == .seconds(5))
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
