/// `GET /users/{id}/todos`.
struct Todo: Codable, Equatable, Sendable {
    var userId: Int
    var id: Int
    var title: String
    var completed: Bool
}
