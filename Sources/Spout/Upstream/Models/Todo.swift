/// `GET /users/{id}/todos`.
struct Todo: Codable, Equatable, Sendable {
    var userId: Int
    var id: Int
    var title: String
    var completed: Bool

    init(userId: Int, id: Int, title: String, completed: Bool) {
        self.userId = userId
        self.id = id
        self.title = title
        self.completed = completed
    }
}
