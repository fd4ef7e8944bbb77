/// `GET /users/{id}/albums`.
struct Album: Codable, Equatable, Sendable {
    var userId: Int
    var id: Int
    var title: String

    init(userId: Int, id: Int, title: String) {
        self.userId = userId
        self.id = id
        self.title = title
    }
}
