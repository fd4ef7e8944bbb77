// The JSONPlaceholder shapes Spout reads from its upstream and writes back out.
//
// Fields the routes do not use (a user's address and company, say) are not decoded; unknown keys
// are ignored, so the real public service and the demo data both decode.

/// An article: `GET /posts`, `GET /posts/{id}`, `GET /users/{id}/posts`.
struct Post: Codable, Equatable, Sendable {
    var userId: Int
    var id: Int
    var title: String
    var body: String
}
