import HTTPServer

/// `GET /demo/...`: the demo data set served the way JSONPlaceholder serves its data, so that with no
/// upstream configured the article routes still go through the real client path (URLSession → HTTP
/// → decode) against Spout itself over loopback.
///
/// What is mimicked is what Spout's routes use: lists filtered by `userId`, paged by `_page` (from 1)
/// and `_limit` (10 when only `_page` is given), an out-of-range page is `[]`, a paged list carries
/// `X-Total-Count`, an unknown id is `404` and the nested lists of an unknown user or post are `[]`.
/// Unlike JSONPlaceholder, an unknown id is an `application/problem+json` `404` (JSONPlaceholder sends
/// `404 {}`; the client reads only the status), and other query parameters are refused with a `400`
/// problem.
///
/// The routes exist only while Spout is its own upstream; with `upstream.baseURL` set they are `404`.
enum DemoRoutes {
    /// `_limit` when only `_page` is given, as JSONPlaceholder does.
    static let defaultPageLimit = 10

    /// Every `/demo` route with its handler.
    static let table: [(pattern: String, handler: Routes.Handler<UpstreamRoutes.Dependencies>)] = [
        ("/demo/users", list { data, _ in data.users.map(\.jsonBytes) }),
        ("/demo/users/{id}", item("user") { data, id in data.users.first { $0.id == id }?.jsonBytes }),
        ("/demo/users/{id}/posts", nested { data, id in data.posts.filter { $0.userId == id }.map(\.jsonBytes) }),
        ("/demo/users/{id}/todos", nested { data, id in data.todos.filter { $0.userId == id }.map(\.jsonBytes) }),
        ("/demo/users/{id}/albums", nested { data, id in data.albums.filter { $0.userId == id }.map(\.jsonBytes) }),
        (
            "/demo/posts",
            list { data, userId in data.posts.filter { userId == nil || $0.userId == userId }.map(\.jsonBytes) }
        ),
        ("/demo/posts/{id}", item("post") { data, id in data.posts.first { $0.id == id }?.jsonBytes }),
        ("/demo/posts/{id}/comments", nested { data, id in data.comments.filter { $0.postId == id }.map(\.jsonBytes) }),
    ]

    private static let listParameters: [String] = ["userId", "_page", "_limit"]
    private static let nestedParameters: [String] = ["_page", "_limit"]

    /// A top-level list, filtered by `userId` and paged.
    private static func list(_ records: @escaping @Sendable (DemoData, Int?) -> [[UInt8]])
        -> Routes.Handler<UpstreamRoutes.Dependencies>
    {
        { context, upstream in
            guard isServing(context, upstream) else { return }
            do throws(Problem) {
                let query = try QueryParameters(query: context.request, known: listParameters)
                let userId = try query.integer("userId", in: 0...Int.max)
                respond(page: try page(records(DemoData.shared, userId), query), context)
            } catch {
                context.respond(problem: error)
            }
        }
    }

    /// The list under one user or post; `[]` when there is no such user or post.
    private static func nested(_ records: @escaping @Sendable (DemoData, Int) -> [[UInt8]])
        -> Routes.Handler<UpstreamRoutes.Dependencies>
    {
        { context, upstream in
            guard isServing(context, upstream) else { return }
            do throws(Problem) {
                let query = try QueryParameters(query: context.request, known: nestedParameters)
                let id = identifier(context)
                respond(page: try page(id.map { records(DemoData.shared, $0) } ?? [], query), context)
            } catch {
                context.respond(problem: error)
            }
        }
    }

    /// One record by id; a `404` problem when there is none. `kind` names the record in the problem.
    private static func item(
        _ kind: String,
        _ record: @escaping @Sendable (DemoData, Int) -> [UInt8]?
    ) -> Routes.Handler<UpstreamRoutes.Dependencies> {
        { context, upstream in
            guard isServing(context, upstream) else { return }
            do throws(Problem) {
                _ = try QueryParameters(query: context.request, known: [])
                if let id = identifier(context), let bytes = record(DemoData.shared, id) {
                    context.respond(json: bytes)
                } else {
                    let id = context.parameters["id"] ?? ""
                    context.respond(problem: .notFound("the demo data has no \(kind) \"\(Routes.clip(id))\""))
                }
            } catch {
                context.respond(problem: error)
            }
        }
    }

    /// Whether the demo data is served (no upstream configured); answers `404` otherwise.
    private static func isServing(_ context: RequestContext, _ upstream: UpstreamRoutes.Dependencies) -> Bool {
        guard upstream.servesDemo else {
            context.respond(problem: .notFound("the demo data is served only while no upstream is configured"))
            return false
        }
        return true
    }

    /// The `{id}` segment as JSONPlaceholder reads it: a decimal number, anything else matches nothing.
    private static func identifier(_ context: RequestContext) -> Int? {
        guard let text = context.parameters["id"], !text.isEmpty, text.utf8.count <= 18,
            text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 })
        else { return nil }
        return Int(text)
    }

    /// One page of `records` and the total, per `_page` and `_limit`.
    private static func page(_ records: [[UInt8]], _ query: QueryParameters) throws(Problem) -> Page {
        let pageNumber = try query.integer("_page", in: 1...Int.max)
        let limit = try query.integer("_limit", in: 0...Int.max)
        guard pageNumber != nil || limit != nil else { return Page(records: records[...], total: nil) }
        let size = limit ?? defaultPageLimit
        let (offset, overflow) = (pageNumber.map { $0 - 1 } ?? 0).multipliedReportingOverflow(by: size)
        guard !overflow, offset < records.count else { return Page(records: [], total: records.count) }
        let end = offset + min(size, records.count - offset)
        return Page(records: records[offset..<end], total: records.count)
    }

    private struct Page {
        var records: ArraySlice<[UInt8]>
        /// The size of the whole list, sent as `X-Total-Count` when the list was paged.
        var total: Int?
    }

    private static func respond(page: Page, _ context: RequestContext) {
        var headers: Headers = ["Content-Type": "application/json"]
        if let total = page.total { headers.add(name: "X-Total-Count", value: String(total)) }
        context.respond(headers: headers, body: JSONText.array(page.records) { $0 })
    }
}
