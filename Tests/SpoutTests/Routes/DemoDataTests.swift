import Foundation
import TestSupport
import Testing

@testable import Spout

/// The demo data set: the embedded copy is the shipped file, and the set is small, consistent and
/// served the way JSONPlaceholder serves its data.
@Suite(.offPool) struct DemoDataTests {
    @Test func embeddedTextEqualsTheShippedFile() throws {
        let url = RouteTest.repositoryRoot.appendingPathComponent("config/demo-data.json")
        let file = try String(contentsOf: url, encoding: .utf8)
        #expect(file == DemoData.embeddedJSON)
        let decoded = try DemoData(json: Data(file.utf8))
        #expect(decoded.posts == DemoData.shared.posts)
        #expect(decoded.users == DemoData.shared.users)
    }

    @Test func theSetIsSmallConsistentAndPagesSeveralTimes() {
        let data = DemoData.shared
        #expect((3...5).contains(data.users.count))
        #expect(data.posts.count > 2 * DemoRoutes.defaultPageLimit)
        let userIds = Set(data.users.map(\.id))
        let postIds = Set(data.posts.map(\.id))
        #expect(userIds.count == data.users.count)
        #expect(postIds.count == data.posts.count)
        #expect(data.posts.allSatisfy { userIds.contains($0.userId) })
        #expect(data.comments.allSatisfy { postIds.contains($0.postId) })
        #expect(data.todos.allSatisfy { userIds.contains($0.userId) })
        #expect(data.albums.allSatisfy { userIds.contains($0.userId) })
        #expect(Set(data.todos.map(\.completed)) == [true, false])
        for user in data.users {
            #expect(data.posts.contains { $0.userId == user.id })
            #expect(data.albums.contains { $0.userId == user.id })
        }
        #expect(data.users.allSatisfy { $0.phone != nil && $0.website != nil })
    }

    @Test func listsPageFilterAndCountLikeJSONPlaceholder() async throws {
        let server = try SpoutTestServer()
        let all = try server.get("/demo/posts")
        #expect(all.status == 200)
        #expect(RouteTest.decode([Post].self, all.body) == DemoData.shared.posts)
        #expect(all.header("X-Total-Count") == nil)

        let second = try server.get("/demo/posts?_page=2&_limit=10")
        #expect(RouteTest.decode([Post].self, second.body)?.map(\.id) == Array(11...20))
        #expect(second.header("X-Total-Count") == String(DemoData.shared.posts.count))

        let defaultLimit = try server.get("/demo/posts?_page=1")
        #expect(RouteTest.decode([Post].self, defaultLimit.body)?.count == DemoRoutes.defaultPageLimit)

        let firstThree = try server.get("/demo/posts?_limit=3")
        #expect(RouteTest.decode([Post].self, firstThree.body)?.map(\.id) == [1, 2, 3])

        let beyond = try server.get("/demo/posts?_page=99&_limit=10")
        #expect(beyond.status == 200)
        #expect(beyond.text == "[]")

        let huge = try server.get("/demo/posts?_page=9223372036854775807&_limit=9223372036854775807")
        #expect(huge.text == "[]")

        let byUser = try server.get("/demo/posts?userId=2&_page=1&_limit=3")
        let expected = DemoData.shared.posts.filter { $0.userId == 2 }
        #expect(RouteTest.decode([Post].self, byUser.body) == Array(expected.prefix(3)))
        #expect(byUser.header("X-Total-Count") == String(expected.count))
        #expect(server.isHealthy())
        await server.stop()
    }

    @Test func itemsAndNestedListsAnswerLikeJSONPlaceholder() async throws {
        let server = try SpoutTestServer()
        let post = try server.get("/demo/posts/7")
        #expect(RouteTest.decode(Post.self, post.body) == DemoData.shared.posts.first { $0.id == 7 })
        let user = try server.get("/demo/users/4")
        #expect(RouteTest.decode(User.self, user.body)?.name == "Lucía Ferrer")

        for missing in ["/demo/posts/999", "/demo/users/0", "/demo/posts/abc", "/demo/users/99999999999999999999999"] {
            let response = try server.get(missing)
            #expect(response.status == 404, "\(missing)")
            // A problem, like every other 404 of the service (JSONPlaceholder itself sends `{}`).
            #expect(response.header("Content-Type") == Problem.mediaType, "\(missing)")
            let problem = RouteTest.object(response.body)
            #expect(problem["type"] as? String == Problem.Kind.notFound, "\(missing)")
            #expect(problem["status"] as? Int == 404, "\(missing)")
            #expect(problem["instance"] as? String == missing)
            let kind = missing.hasPrefix("/demo/posts") ? "post" : "user"
            #expect((problem["detail"] as? String)?.hasPrefix("the demo data has no \(kind) ") == true, "\(problem)")
        }

        let todos = try server.get("/demo/users/1/todos")
        #expect(RouteTest.decode([Todo].self, todos.body) == DemoData.shared.todos.filter { $0.userId == 1 })
        let albums = try server.get("/demo/users/3/albums")
        #expect(RouteTest.decode([Album].self, albums.body) == DemoData.shared.albums.filter { $0.userId == 3 })
        let comments = try server.get("/demo/posts/5/comments")
        let expected = DemoData.shared.comments.filter { $0.postId == 5 }
        #expect(RouteTest.decode([Spout.Comment].self, comments.body) == expected)
        #expect(try server.get("/demo/users/77/posts").text == "[]")
        #expect(try server.get("/demo/posts/77/comments").text == "[]")
        #expect(server.isHealthy())
        await server.stop()
    }

    @Test func badQueriesAreProblemsNamingTheParameter() async throws {
        let server = try SpoutTestServer()
        let cases = [
            ("/demo/posts?foo=1", "foo"), ("/demo/posts?_page=0", "_page"), ("/demo/posts?userId=x", "userId"),
        ]
        for (path, parameter) in cases {
            let response = try server.get(path)
            #expect(response.status == 400, "\(path)")
            #expect(response.header("Content-Type") == Problem.mediaType)
            #expect(RouteTest.object(response.body)["parameter"] as? String == parameter, "\(path)")
        }
        await server.stop()
    }

    @Test func theDemoIsNotServedWhenAnUpstreamIsConfigured() async throws {
        let server = try SpoutTestServer { $0.upstream.baseURL = "http://127.0.0.1:9" }
        let response = try server.get("/demo/posts")
        #expect(response.status == 404)
        #expect(response.header("Content-Type") == Problem.mediaType)
        await server.stop()
    }
}
