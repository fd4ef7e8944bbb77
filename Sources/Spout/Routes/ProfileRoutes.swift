import HTTPServer
import Reactive

/// `GET /users/{id}/profile`: the user and their posts, fetched in parallel and joined with `zip`.
enum ProfileRoutes {
    /// `{"user":{…},"posts":[…]}`; `404` when the upstream has no such user.
    static let profile: Routes.Handler<UpstreamRoutes.Dependencies> = { context, dependencies in
        do throws(Problem) {
            let id = try ArticleRoutes.recordIdentifier(context, "id")
            let upstream = dependencies.client
            // Both requests start together when zip asks each side for its value.
            let headers = context.upstreamHeaders
            let joined = upstream.get(User.self, "/users/\(id)", headers: headers)
                .zip(upstream.get([Post].self, "/users/\(id)/posts", headers: headers))
            UpstreamReply.respond(context, to: joined, notFound: "no user \(id)") { user, posts in
                var object = JSONObjectWriter()
                object.addRaw("user", json: user.jsonBytes)
                object.addRaw("posts", json: JSONText.array(posts) { $0.jsonBytes })
                return object.finish()
            }
        } catch {
            context.respond(problem: error)
        }
    }
}
