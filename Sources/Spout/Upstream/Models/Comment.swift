/// `GET /posts/{id}/comments`.
struct Comment: Codable, Equatable, Sendable {
    var postId: Int
    var id: Int
    var name: String
    var email: String
    var body: String
}
