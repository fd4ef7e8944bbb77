import Foundation
import TestSupport
import Testing

@testable import Spout

/// `/articles` and `/articles/{id}`: JSON from the upstream, over the demo data (Spout fetching its
/// own `/demo` over loopback) and over a scripted upstream with faults.
@Suite(.offPool) struct ArticleRoutesTests {
    @Test func articlesComeFromTheDemoDataThroughTheClientPath() async throws {
        let server = try SpoutTestServer()
        let all = try server.get("/articles")
        #expect(all.status == 200)
        #expect(all.header("Content-Type") == "application/json")
        let articles = RouteTest.object(all.body)["articles"] as? [Any]
        #expect(articles?.count == DemoData.shared.posts.count)
        struct Listing: Decodable { var articles: [Post] }
        #expect(RouteTest.decode(Listing.self, all.body)?.articles == DemoData.shared.posts)
        // The real path ran: Spout asked its own demo upstream over loopback.
        #expect(eventually { RouteTest.logLines(server, path: "/demo/posts").count == 1 })

        let byUser = try server.get("/articles?userId=3")
        let expected = DemoData.shared.posts.filter { $0.userId == 3 }
        #expect(RouteTest.decode(Listing.self, byUser.body)?.articles == expected)

        let one = try server.get("/articles/12")
        #expect(RouteTest.decode(Post.self, one.body) == DemoData.shared.posts.first { $0.id == 12 })
        #expect(server.isHealthy())
        await server.stop()
    }

    @Test func anArticleTheUpstreamDoesNotHaveIsNotFound() async throws {
        let server = try SpoutTestServer()
        let response = try server.get("/articles/999")
        #expect(response.status == 404)
        #expect(response.header("Content-Type") == Problem.mediaType)
        let problem = RouteTest.object(response.body)
        #expect(problem["detail"] as? String == "no article 999")
        #expect(problem["upstreamStatus"] as? Int == 404)
        // The upstream resource, not the upstream's address (configuration, for the log only).
        #expect(problem["upstream"] as? String == "/posts/999")
        #expect(!response.text.contains("127.0.0.1") && !response.text.contains("/demo"), "\(response.text)")
        await server.stop()
    }

    @Test(arguments: [
        ("/articles/0", "id"), ("/articles/abc", "id"), ("/articles/99999999999999999999", "id"),
        ("/articles?userId=x", "userId"), ("/articles?userId=0", "userId"), ("/articles?user=1", "user"),
        ("/articles/3?x=1", "x"),
    ])
    func badRequestsAreProblemsNamingTheParameter(path: String, parameter: String) async throws {
        let server = try SpoutTestServer()
        let response = try server.get(path)
        #expect(response.status == 400)
        #expect(RouteTest.object(response.body)["parameter"] as? String == parameter)
        await server.stop()
    }

    @Test func aClientThatAcceptsNoJSONGets406() async throws {
        let server = try SpoutTestServer()
        let response = try server.get("/articles", headers: ["Accept: text/event-stream"])
        #expect(response.status == 406)
        await server.stop()
    }

    @Test func anUpstreamErrorStatusIsA502NamingTheUpstreamAndItsStatus() async throws {
        let fixture = try UpstreamFixture { _ in .status(500) }
        defer { fixture.stop() }
        let server = try RouteTest.server(upstream: fixture)
        let response = try server.get("/articles?userId=2")
        #expect(response.status == 502)
        #expect(response.header("Content-Type") == Problem.mediaType)
        let problem = RouteTest.object(response.body)
        #expect(problem["type"] as? String == Problem.Kind.upstreamFailed)
        #expect(problem["upstreamStatus"] as? Int == 500)
        #expect(problem["upstream"] as? String == "/posts?userId=2")
        #expect(!response.text.contains("127.0.0.1"), "no upstream address in a problem: \(response.text)")
        #expect(problem["instance"] as? String == "/articles")
        #expect(fixture.snapshot.requests(to: "/posts?userId=2") == 1)
        #expect(server.isHealthy())
        await server.stop()
    }

    @Test func aHangingUpstreamIsA504WithinTheTimeout() async throws {
        let fixture = try UpstreamFixture { _ in .hang }
        defer { fixture.stop() }
        let server = try RouteTest.server(upstream: fixture, attemptTimeoutSeconds: 0.3)
        let started = ContinuousClock.now
        let response = try server.get("/articles/1")
        #expect(response.status == 504)
        #expect(RouteTest.object(response.body)["type"] as? String == Problem.Kind.upstreamTimeout)
        // Bounded by the configured deadline (1.3 s here), far below the client's 10 s read timeout.
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(await fixture.waitUntil { $0.inFlight == 0 })
        await server.stop()
    }

    @Test func aBodyCutMidwayOrMalformedIsA502() async throws {
        let fixture = try UpstreamFixture { request in
            request.path == "/posts/1" ? .resetMidBody(partial: #"{"userId":1,"#) : .json(#"{"userId":"one"}"#)
        }
        defer { fixture.stop() }
        let server = try RouteTest.server(upstream: fixture)
        let cut = try server.get("/articles/1")
        #expect(cut.status == 502)
        let malformed = try server.get("/articles/2")
        #expect(malformed.status == 502)
        #expect((RouteTest.object(malformed.body)["detail"] as? String)?.contains("could not be read") == true)
        #expect(server.isHealthy())
        await server.stop()
    }
}
