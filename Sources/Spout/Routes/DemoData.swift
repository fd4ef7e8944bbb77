import Foundation

/// The demo data set Spout serves under `/demo` when no upstream is configured: a few users with
/// their posts, comments, todos and albums, in the JSONPlaceholder shape.
///
/// The set is `config/demo-data.json`, embedded in the binary (``embeddedJSON``).
///
/// **Thread safety:** immutable value; shared.
struct DemoData: Sendable, Decodable {
    var users: [User]
    var posts: [Post]
    var comments: [Comment]
    var todos: [Todo]
    var albums: [Album]

    /// The embedded set, decoded once on first use.
    static let shared: DemoData = {
        // A test decodes the same text, so the empty fallback is never taken by a shipped binary.
        (try? DemoData(json: Data(embeddedJSON.utf8)))
            ?? DemoData(users: [], posts: [], comments: [], todos: [], albums: [])
    }()

    init(users: [User], posts: [Post], comments: [Comment], todos: [Todo], albums: [Album]) {
        self.users = users
        self.posts = posts
        self.comments = comments
        self.todos = todos
        self.albums = albums
    }

    /// Decodes a data set in the layout of `config/demo-data.json`.
    init(json: Data) throws {
        self = try JSONDecoder().decode(DemoData.self, from: json)
    }
}
