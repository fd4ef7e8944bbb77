/// The JSONPlaceholder shapes Spout reads from its upstream and writes back out.
///
/// Fields the routes do not use (a user's address and company, say) are not decoded; unknown keys
/// are ignored, so the real public service and the demo data both decode.

/// An article: `GET /posts`, `GET /posts/{id}`, `GET /users/{id}/posts`.
struct Post: Codable, Equatable, Sendable {
    var userId: Int
    var id: Int
    var title: String
    var body: String

    init(userId: Int, id: Int, title: String, body: String) {
        self.userId = userId
        self.id = id
        self.title = title
        self.body = body
    }
}

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

/// `GET /posts/{id}/comments`.
struct Comment: Codable, Equatable, Sendable {
    var postId: Int
    var id: Int
    var name: String
    var email: String
    var body: String

    init(postId: Int, id: Int, name: String, email: String, body: String) {
        self.postId = postId
        self.id = id
        self.name = name
        self.email = email
        self.body = body
    }
}

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
