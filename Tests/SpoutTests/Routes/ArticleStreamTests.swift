import Foundation
import Reactive
import TestSupport
import Testing

@testable import Spout

/// `/articles/stream` and the lazy paging under it: upstream pages follow the client's demand.
@Suite(.offPool) struct ArticleStreamTests {
    @Test func theDemoArticlesStreamAsEventsWithTheirPositionAsId() async throws {
        let server = try SpoutTestServer()
        let stream = try StreamClient(port: server.port, path: "/articles/stream")
        #expect(stream.status == 200)
        #expect(stream.header("Content-Type") == "text/event-stream")
        let events = try stream.remainingEvents()
        stream.close()
        let posts = DemoData.shared.posts
        #expect(events.count == posts.count + 1)
        #expect(events.dropLast().map(\.lastEventID) == posts.indices.map(String.init))
        #expect(events.dropLast().compactMap { RouteTest.decode(Post.self, $0.data) } == posts)
        #expect(events.last?.type == "end")
        #expect(events.last?.data == #"{"reason":"completed"}"#)
        // 32 articles in pages of 10: four page requests, the last one short.
        #expect(eventually { RouteTest.logLines(server, path: "/demo/posts").count == 4 })
        #expect(server.isHealthy())
        await server.stop()
    }

    @Test func aBoundedStreamFetchesOnlyThePagesItNeeds() async throws {
        let server = try SpoutTestServer()
        let stream = try StreamClient(port: server.port, path: "/articles/stream?count=3")
        let events = try stream.remainingEvents()
        stream.close()
        #expect(events.map(\.type) == ["message", "message", "message", "end"])
        #expect(events.dropLast().map(\.lastEventID) == ["0", "1", "2"])
        #expect(eventually { server.service.metrics.streamsEnded.value(["completed"]) == 1 })
        #expect(RouteTest.logLines(server, path: "/demo/posts").count == 1)
        await server.stop()
    }

    @Test func ndjsonCarriesOneArticlePerLine() async throws {
        let server = try SpoutTestServer()
        let stream = try StreamClient(port: server.port, path: "/articles/stream?userId=2&format=ndjson")
        #expect(stream.header("Content-Type") == "application/x-ndjson")
        let body = String(decoding: try stream.readToEnd(), as: UTF8.self)
        stream.close()
        let lines = body.split(separator: "\n").map(String.init)
        #expect(lines.compactMap { RouteTest.decode(Post.self, $0) } == DemoData.shared.posts.filter { $0.userId == 2 })
        #expect(lines.count == DemoData.shared.posts.filter { $0.userId == 2 }.count + 1)
        #expect(lines.last == #"{"end":{"reason":"completed"}}"#)
        await server.stop()
    }

    @Test func lastEventIDResumesAfterThatArticle() async throws {
        let server = try SpoutTestServer()
        let stream = try StreamClient(port: server.port, path: "/articles/stream", headers: ["Last-Event-ID: 25"])
        let events = try stream.remainingEvents()
        stream.close()
        #expect(events.dropLast().map(\.lastEventID) == (26..<DemoData.shared.posts.count).map(String.init))
        #expect(events.first.flatMap { RouteTest.decode(Post.self, $0.data) } == DemoData.shared.posts[26])

        let pastTheEnd = try server.get("/articles/stream?count=5", headers: ["Last-Event-ID: 4"])
        #expect(pastTheEnd.status == 204)
        let bad = try server.get("/articles/stream", headers: ["Last-Event-ID: x"])
        #expect(bad.status == 400)
        #expect(RouteTest.object(bad.body)["parameter"] as? String == "Last-Event-ID")
        await server.stop()
    }

    @Test func aResumeInsideAPageStartsAtThatPage() async throws {
        let fixture = try UpstreamFixture { request in
            let page = Int(request.query("_page") ?? "") ?? 0
            return .json(RouteTest.json(page == 2 ? RouteTest.posts(from: 11, count: 5) : []))
        }
        defer { fixture.stop() }
        let server = try RouteTest.server(upstream: fixture)
        let stream = try StreamClient(port: server.port, path: "/articles/stream", headers: ["Last-Event-ID: 12"])
        let events = try stream.remainingEvents()
        stream.close()
        // Positions 13 and 14 are the 4th and 5th articles of page 2 (ids 14 and 15 here).
        #expect(events.dropLast().map(\.lastEventID) == ["13", "14"])
        #expect(events.dropLast().compactMap { RouteTest.decode(Post.self, $0.data)?.id } == [14, 15])
        #expect(fixture.snapshot.log == ["/posts?_page=2&_limit=10"])
        await server.stop()
    }

    @Test func badStreamParametersAreProblems() async throws {
        let server = try SpoutTestServer()
        for (path, parameter) in [
            ("/articles/stream?count=-1", "count"), ("/articles/stream?format=xml", "format"),
            ("/articles/stream?format=json", "format"), ("/articles/stream?page=2", "page"),
        ] {
            let response = try server.get(path)
            #expect(response.status == 400, "\(path)")
            #expect(RouteTest.object(response.body)["parameter"] as? String == parameter, "\(path)")
        }
        await server.stop()
    }

    /// The subscriber's demand alone decides the page requests: 3 articles cost one page, the 11th
    /// the second, and cancelling ends the request in flight.
    @Test func pagesAreRequestedOnlyWhenDemandReachesPastWhatWasFetched() async throws {
        let fixture = try UpstreamFixture { request in
            let page = Int(request.query("_page") ?? "") ?? 0
            if page == 3 { return .hang }
            return .json(RouteTest.json(RouteTest.posts(from: (page - 1) * 10 + 1, count: 10)))
        }
        defer { fixture.stop() }
        var configuration = SpoutConfiguration.Upstream()
        // Only the cancel below may end the hanging third page, however slow the machine.
        configuration.attemptTimeoutSeconds = 120
        configuration.deadlineSeconds = 120
        let client = UpstreamClient(configuration: configuration, baseURL: fixture.baseURL)
        let subscriber = TrackingSubscriber<IndexedPost, UpstreamError>(initialDemand: .max(3))
        ArticlePages(client: client, pageSize: 10).subscribe(subscriber)

        #expect(eventually { subscriber.values.count == 3 })
        #expect(subscriber.values.map(\.index) == [0, 1, 2])
        #expect(fixture.snapshot.log == ["/posts?_page=1&_limit=10"])

        subscriber.request(.max(7))  // still inside the first page
        #expect(eventually { subscriber.values.count == 10 })
        #expect(fixture.snapshot.total == 1)

        subscriber.request(.max(1))  // one past the first page: the second page, and only it
        #expect(eventually { subscriber.values.count == 11 })
        #expect(subscriber.values.last == IndexedPost(index: 10, post: RouteTest.posts(from: 11, count: 1)[0]))
        #expect(fixture.snapshot.log == ["/posts?_page=1&_limit=10", "/posts?_page=2&_limit=10"])

        subscriber.request(.max(10))  // past the second page: the third page hangs
        #expect(await fixture.waitUntil { $0.requests(to: "/posts?_page=3&_limit=10") == 1 && $0.inFlight == 1 })
        subscriber.cancel()
        #expect(await fixture.waitUntil { $0.inFlight == 0 })
        #expect(fixture.snapshot.total == 3)
        #expect(subscriber.completion == nil)
    }

    /// Over a real socket: a client that has read 3 articles has caused one page request; once it
    /// has read the whole first page the second is fetched. The articles are large (1 MB each) so
    /// that the kernel's socket buffers cannot absorb the first page while the client reads nothing.
    @Test func aReaderOfThreeArticlesCausesOnePageRequest() async throws {
        let big = RouteTest.json(RouteTest.posts(from: 1, count: 10, bodyBytes: 1 << 20))
        let small = RouteTest.json(RouteTest.posts(from: 11, count: 2))
        let fixture = try UpstreamFixture { request in
            .json(request.query("_page") == "1" ? big : small)
        }
        defer { fixture.stop() }
        // The first page is a 10 MB body: above the default upstream.maxBodyBytes.
        let server = try RouteTest.server(upstream: fixture, attemptTimeoutSeconds: 20) {
            $0.upstream.maxBodyBytes = 16 << 20
        }
        // Socket buffers of at most ~4.5 MiB (send ≤ 4 MiB by net.ipv4.tcp_wmem, receive 2 × 256 KiB) cannot
        // hold the 7 MB of the first page left after 3 articles: the writer stays unwritable.
        let reader = try LargeEventReader(port: server.port, path: "/articles/stream", receiveBufferBytes: 256 * 1024)
        try reader.readEvents(untilCount: 3)
        #expect(reader.events.count >= 3)
        #expect(reader.events.prefix(3).allSatisfy { $0.hasPrefix("id: ") })
        #expect(fixture.snapshot.log == ["/posts?_page=1&_limit=10"])

        reader.enlargeReceiveBuffer(bytes: 4 << 20)
        try reader.readEvents(untilCount: 10)
        #expect(await fixture.waitUntil { $0.requests(toPath: "/posts") == 2 })
        try reader.readEvents(untilCount: 13)
        reader.close()
        #expect(reader.events.count == 13)
        #expect(
            reader.events.prefix(12).map { $0.split(separator: "\n").first.map(String.init) ?? "" }
                == (0..<12).map { "id: \($0)" }
        )
        #expect(reader.events.last?.hasPrefix("event: end") == true)
        #expect(fixture.snapshot.log == ["/posts?_page=1&_limit=10", "/posts?_page=2&_limit=10"])
        await server.stop()
    }

    @Test func anUpstreamFailureMidStreamIsAnErrorEventAfterTheArticlesSoFar() async throws {
        let fixture = try UpstreamFixture { request in
            request.query("_page") == "1" ? .json(RouteTest.json(RouteTest.posts(from: 1, count: 10))) : .status(500)
        }
        defer { fixture.stop() }
        let server = try RouteTest.server(upstream: fixture)
        let stream = try StreamClient(port: server.port, path: "/articles/stream")
        let events = try stream.remainingEvents()
        stream.close()
        #expect(events.count == 11)
        #expect(events.prefix(10).map(\.lastEventID) == (0..<10).map(String.init))
        let failure = try #require(events.last)
        #expect(failure.type == "error")
        let problem = RouteTest.object(failure.data)
        #expect(problem["status"] as? Int == 502)
        #expect(problem["upstreamStatus"] as? Int == 500)
        #expect(problem["instance"] as? String == "/articles/stream")
        #expect(eventually { server.service.metrics.streamsEnded.value(["error"]) == 1 })

        let ndjson = try StreamClient(port: server.port, path: "/articles/stream?format=ndjson")
        let lines = String(decoding: try ndjson.readToEnd(), as: UTF8.self).split(separator: "\n")
        ndjson.close()
        #expect(lines.count == 11)
        #expect((RouteTest.object(String(lines.last ?? ""))["error"] as? [String: Any])?["status"] as? Int == 502)
        #expect(server.isHealthy())
        await server.stop()
    }

    @Test func aClientThatLeavesCancelsThePageInFlight() async throws {
        let fixture = try UpstreamFixture { request in
            request.query("_page") == "1" ? .json(RouteTest.json(RouteTest.posts(from: 1, count: 10))) : .hang
        }
        defer { fixture.stop() }
        // Attempts may take 120 s: only cancellation can end the hanging page within the waits below,
        // however long a loaded machine keeps this test from running.
        let server = try RouteTest.server(upstream: fixture, attemptTimeoutSeconds: 120)
        let stream = try StreamClient(port: server.port, path: "/articles/stream")
        _ = try stream.nextEvents(10)
        #expect(await fixture.waitUntil { $0.requests(toPath: "/posts") == 2 && $0.inFlight == 1 })
        stream.close()
        #expect(await fixture.waitUntil { $0.inFlight == 0 })
        #expect(eventually { server.service.metrics.streamsEnded.value(["client_gone"]) == 1 })
        #expect(server.isHealthy())
        await server.stop()
    }
}
