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

    init(id: Int, name: String, username: String, email: String, phone: String? = nil, website: String? = nil) {
        self.id = id
        self.name = name
        self.username = username
        self.email = email
        self.phone = phone
        self.website = website
    }
}
