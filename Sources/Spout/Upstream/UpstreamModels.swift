/// The JSONPlaceholder shapes Spout reads from its upstream and writes back out.
///
/// Fields the routes do not use (a user's address and company, say) are not decoded; unknown keys
/// are ignored, so the real public service and the demo data both decode.

/// An article: `GET /posts`, `GET /posts/{id}`, `GET /users/{id}/posts`.
public struct Post: Codable, Equatable, Sendable {
    public var userId: Int
    public var id: Int
    public var title: String
    public var body: String

    public init(userId: Int, id: Int, title: String, body: String) {
        self.userId = userId
        self.id = id
        self.title = title
        self.body = body
    }
}

/// `GET /users/{id}`.
public struct User: Codable, Equatable, Sendable {
    public var id: Int
    public var name: String
    public var username: String
    public var email: String
    /// The user's phone number, when the upstream has one.
    public var phone: String?
    /// The user's website, when the upstream has one.
    public var website: String?

    public init(id: Int, name: String, username: String, email: String, phone: String? = nil, website: String? = nil) {
        self.id = id
        self.name = name
        self.username = username
        self.email = email
        self.phone = phone
        self.website = website
    }
}

/// `GET /users/{id}/todos`.
public struct Todo: Codable, Equatable, Sendable {
    public var userId: Int
    public var id: Int
    public var title: String
    public var completed: Bool

    public init(userId: Int, id: Int, title: String, completed: Bool) {
        self.userId = userId
        self.id = id
        self.title = title
        self.completed = completed
    }
}

/// `GET /posts/{id}/comments`.
public struct Comment: Codable, Equatable, Sendable {
    public var postId: Int
    public var id: Int
    public var name: String
    public var email: String
    public var body: String

    public init(postId: Int, id: Int, name: String, email: String, body: String) {
        self.postId = postId
        self.id = id
        self.name = name
        self.email = email
        self.body = body
    }
}

/// `GET /users/{id}/albums`.
public struct Album: Codable, Equatable, Sendable {
    public var userId: Int
    public var id: Int
    public var title: String

    public init(userId: Int, id: Int, title: String) {
        self.userId = userId
        self.id = id
        self.title = title
    }
}
