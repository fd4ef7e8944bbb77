import Foundation
import TestSupport
import Testing

@testable import Spout

/// `/users/{id}/profile` (two calls joined with `zip`) and `/dashboard/{userId}` (three with `Zip3`,
/// partial when a branch fails).
@Suite(.offPool) struct ProfileDashboardTests {
    private struct Profile: Decodable {
        var user: User
        var posts: [Post]
    }

    private struct Dashboard: Decodable {
        var userId: Int
        var user: User?
        var latestPosts: [Post]?
        var openTodos: [Todo]?
    }

    @Test func aProfileIsTheUserAndTheirPosts() async throws {
        let server = try SpoutTestServer()
        let response = try server.get("/users/2/profile")
        #expect(response.status == 200)
        let profile = try #require(RouteTest.decode(Profile.self, response.body))
        #expect(profile.user == DemoData.shared.users.first { $0.id == 2 })
        #expect(profile.posts == DemoData.shared.posts.filter { $0.userId == 2 })

        let missing = try server.get("/users/42/profile")
        #expect(missing.status == 404)
        #expect(RouteTest.object(missing.body)["detail"] as? String == "no user 42")
        await server.stop()
    }

    @Test func theProfileCallsRunInParallelAndTimeOutTogether() async throws {
        // The fixture notes how many requests were open when each arrived: 2 for the second one
        // means it was sent while the first was still unanswered.
        let openAtArrival = TestBox<[Int]>([])
        let fixtureBox = TestBox<UpstreamFixture?>(nil)
        let fixture = try UpstreamFixture { _ in
            let open = fixtureBox.value?.snapshot.inFlight ?? 0
            openAtArrival.update { $0.append(open) }
            return .hang
        }
        fixtureBox.update { $0 = fixture }
        defer { fixture.stop() }
        let server = try RouteTest.server(upstream: fixture, attemptTimeoutSeconds: 1)
        let response = try server.get("/users/1/profile")
        #expect(response.status == 504)
        #expect(fixture.snapshot.requests(to: "/users/1") == 1)
        #expect(fixture.snapshot.requests(to: "/users/1/posts") == 1)
        #expect(openAtArrival.value.sorted() == [1, 2])
        #expect(await fixture.waitUntil { $0.inFlight == 0 })
        await server.stop()
    }

    @Test func aDashboardIsTheUserTheLatestPostsAndTheOpenTodos() async throws {
        let server = try SpoutTestServer()
        let response = try server.get("/dashboard/3")
        #expect(response.status == 200)
        let dashboard = try #require(RouteTest.decode(Dashboard.self, response.body))
        #expect(dashboard.user?.id == 3)
        let posts = DemoData.shared.posts.filter { $0.userId == 3 }.sorted { $0.id > $1.id }
        #expect(dashboard.latestPosts == Array(posts.prefix(DashboardRoutes.latestPostCount)))
        #expect(dashboard.openTodos == DemoData.shared.todos.filter { $0.userId == 3 && !$0.completed })
        #expect(dashboard.openTodos?.isEmpty == false)
        #expect((RouteTest.object(response.body)["errors"] as? [Any])?.isEmpty == true)
        await server.stop()
    }

    @Test func aFailingBranchLeavesAPartialDashboardWithItsError() async throws {
        let fixture = try UpstreamFixture { request in
            switch request.path {
            case "/users/1": .json(#"{"id":1,"name":"N","username":"n","email":"n@example.com"}"#)
            case "/users/1/posts": .json(RouteTest.json(RouteTest.posts(from: 1, count: 7)))
            default: .status(500)
            }
        }
        defer { fixture.stop() }
        let server = try RouteTest.server(upstream: fixture)
        let response = try server.get("/dashboard/1")
        #expect(response.status == 200)
        let dashboard = try #require(RouteTest.decode(Dashboard.self, response.body))
        #expect(dashboard.user?.name == "N")
        #expect(dashboard.latestPosts?.map(\.id) == [7, 6, 5, 4, 3])
        #expect(dashboard.openTodos == nil)
        let object = RouteTest.object(response.body)
        #expect(object["openTodos"] is NSNull)
        let errors = try #require(object["errors"] as? [[String: Any]])
        #expect(errors.count == 1)
        #expect(errors.first?["part"] as? String == "openTodos")
        #expect(errors.first?["status"] as? Int == 502)
        #expect(errors.first?["upstreamStatus"] as? Int == 500)
        #expect(errors.first?["upstream"] as? String == "/users/1/todos")
        #expect(server.isHealthy())
        await server.stop()
    }

    @Test func everyBranchFailingIsA502AndAllTimingOutA504() async throws {
        let failing = try UpstreamFixture { _ in .status(503) }
        defer { failing.stop() }
        let server = try RouteTest.server(upstream: failing)
        let response = try server.get("/dashboard/1")
        #expect(response.status == 502)
        #expect(response.header("Content-Type") == Problem.mediaType)
        let detail = RouteTest.object(response.body)["detail"] as? String ?? ""
        #expect(detail.contains("user:") && detail.contains("latestPosts:") && detail.contains("openTodos:"))
        await server.stop()

        let hanging = try UpstreamFixture { _ in .hang }
        defer { hanging.stop() }
        let slow = try RouteTest.server(upstream: hanging, attemptTimeoutSeconds: 1.5)
        let timedOut = try slow.get("/dashboard/1")
        #expect(timedOut.status == 504)
        #expect(hanging.snapshot.total == 3)
        #expect(await hanging.waitUntil { $0.inFlight == 0 })
        await slow.stop()
    }

    /// Timeouts after retries come wrapped in `gaveUp`: all three parts timing out is still a `504`.
    @Test func everyBranchTimingOutAfterRetriesIsA504() async throws {
        let hanging = try UpstreamFixture { _ in .hang }
        defer { hanging.stop() }
        let server = try RouteTest.server(upstream: hanging, attemptTimeoutSeconds: 0.5) { configuration in
            configuration.upstream.attempts = 2
            configuration.upstream.baseDelayMilliseconds = 1
            configuration.upstream.maxDelayMilliseconds = 5
            configuration.upstream.deadlineSeconds = 10
        }
        let response = try server.get("/dashboard/1", timeout: .seconds(20))
        #expect(response.status == 504)
        let problem = RouteTest.object(response.body)
        #expect(problem["type"] as? String == Problem.Kind.upstreamTimeout)
        #expect((problem["detail"] as? String)?.contains("after 2 attempts") == true, "\(problem)")
        #expect(!response.text.contains("127.0.0.1"), "no upstream address in a problem: \(response.text)")
        #expect(hanging.snapshot.total == 6)
        #expect(await hanging.waitUntil { $0.inFlight == 0 })
        await server.stop()
    }

    @Test func aUserTheUpstreamDoesNotKnowIsNotFound() async throws {
        let server = try SpoutTestServer()
        let response = try server.get("/dashboard/77")
        #expect(response.status == 404)
        #expect(RouteTest.object(response.body)["detail"] as? String == "no user 77")
        let bad = try server.get("/dashboard/x")
        #expect(bad.status == 400)
        #expect(RouteTest.object(bad.body)["parameter"] as? String == "userId")
        await server.stop()
    }
}
