/// `GET /users/{id}/albums`.
struct Album: Codable, Equatable, Sendable {
    var userId: Int
    var id: Int
    var title: String
}
