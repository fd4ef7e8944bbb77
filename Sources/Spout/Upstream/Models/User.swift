/// `GET /users/{id}`.
struct User: Codable, Equatable, Sendable {
    var id: Int
    var name: String
    var username: String
    var email: String
    /// The user's phone number, when the upstream has one.
    var phone: String?
    /// The user's website, when the upstream has one.
    var website: String?
}
