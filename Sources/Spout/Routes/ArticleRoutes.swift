import EventLoops
import Foundation
import HTTPServer
import Reactive

/// `GET /articles`, `GET /articles/{id}` and `GET /articles/stream`: the upstream's posts as
/// articles, as JSON or as a stream that pages the upstream lazily.
enum ArticleRoutes {
    /// The query parameters of `/articles`.
    static let listParameters: [String] = ["userId"]
    /// The query parameters of `/articles/stream`.
    static let streamParameters: [String] = ["userId", "count", "format"]

    /// `GET /articles?userId=`: `{"articles":[…]}` from `GET /posts`.
    static let list: Routes.Handler<UpstreamRoutes.Dependencies> = { context, upstream in
        do throws(Problem) {
            let query = try QueryParameters(query: context.request, known: listParameters)
            try requireJSON(context)
            let userId = try query.integer("userId", in: 1...Int.max)
            let items = userId.map { [URLQueryItem(name: "userId", value: String($0))] } ?? []
            let posts = upstream.client.get([Post].self, "/posts", query: items, headers: context.upstreamHeaders)
            UpstreamReply.respond(context, to: posts) { posts in
                var object = JSONObjectWriter()
                object.addRaw("articles", json: JSONText.array(posts) { $0.jsonBytes })
                return object.finish()
            }
        } catch {
            context.respond(problem: error)
        }
    }

    /// `GET /articles/{id}`: the post, or `404` when the upstream has none.
    static let item: Routes.Handler<UpstreamRoutes.Dependencies> = { context, upstream in
        do throws(Problem) {
            let id = try recordIdentifier(context, "id")
            UpstreamReply.respond(
                context,
                to: upstream.client.get(Post.self, "/posts/\(id)", headers: context.upstreamHeaders),
                notFound: "no article \(id)"
            ) { $0.jsonBytes }
        } catch {
            context.respond(problem: error)
        }
    }

    /// `GET /articles/stream?userId=&count=&format=`: one event per article, pages fetched lazily.
    static let stream: Routes.Handler<UpstreamRoutes.Dependencies> = { context, upstream in
        do throws(Problem) {
            let plan = try ArticleStreamPlan(context: context, upstream)
            if plan.limit == 0 && plan.isResume {
                // Resuming past the end of a bounded stream: 204 stops EventSource's reconnects.
                context.respond(status: .noContent, body: [])
                return
            }
            switch plan.format {
            case .sse:
                startStream(plan, context, encoder: SSEJSONEncoder(retryMilliseconds: plan.retryMilliseconds))
            case .ndjson, .json:
                startStream(plan, context, encoder: NDJSONEventEncoder())
            }
        } catch {
            context.respond(problem: error)
        }
    }

    private static func startStream<E: StreamEncoder>(_ plan: ArticleStreamPlan, _ context: RequestContext, encoder: E)
    where E.Element == JSONStreamEvent {
        guard let writer = context.startEventStream(mediaType: plan.format.mediaType) else { return }
        // At most a page per window: the first request is one page, and each later one comes only
        // once the writer has taken what was sent, so pages follow the client's reading.
        let bridge = DemandBridge<E, UpstreamError>(
            writer: writer,
            encoder: encoder,
            window: DemandBridge.Window(maximum: plan.pages.pageSize),
            heartbeats: context.heartbeats,
            failureProblem: { error in
                context.noteUpstreamFailure(error)
                return context.instanced(error.problem)
            },
            onEnd: { summary in context.streamEnded(summary) }
        )
        plan.pages
            .map { article in JSONStreamEvent(id: String(article.index), json: article.post.jsonBytes) }
            .subscribe(bridge)
    }

    /// The checks of a route answering one upstream record as JSON (`/articles/{id}`, `/users/{id}/profile`,
    /// `/dashboard/{userId}`): no query parameters, an `Accept` that allows JSON, and a positive integer at the
    /// path parameter `name`, which it returns. Checked in that order, so a request wrong in several ways gets
    /// the same problem on every such route.
    static func recordIdentifier(_ context: RequestContext, _ name: String) throws(Problem) -> Int {
        _ = try QueryParameters(query: context.request, known: [])
        try requireJSON(context)
        return try pathIdentifier(context, name)
    }

    /// `406` unless the client accepts JSON.
    static func requireJSON(_ context: RequestContext) throws(Problem) {
        _ = try StreamFormat.negotiate(format: nil, accept: context.request.headers["Accept"], allowed: [.json])
    }

    /// The `Last-Event-ID` of an SSE reconnect: the id of an event of the stream, a decimal number below
    /// `limit` (at most ten digits); `nil` when the request has none.
    static func lastEventID(_ context: RequestContext, below limit: Int) throws(Problem) -> Int? {
        guard let lastEventID = context.request.headers["Last-Event-ID"] else { return nil }
        let trimmed = lastEventID.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty, trimmed.utf8.count <= 10, trimmed.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
            let last = Int(trimmed), last < limit
        else {
            throw .invalidParameter(
                "Last-Event-ID",
                "Last-Event-ID must be the index of an event of this stream, got \"\(Routes.clip(lastEventID))\""
            )
        }
        return last
    }

    /// A `{name}` path segment that must be a positive integer.
    static func pathIdentifier(_ context: RequestContext, _ name: String) throws(Problem) -> Int {
        let text = context.parameters[name] ?? ""
        guard !text.isEmpty, text.utf8.count <= 18, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
            let value = Int(text), value > 0
        else {
            throw .invalidParameter(name, "\(name) must be a positive integer, got \"\(Routes.clip(text))\"")
        }
        return value
    }
}

/// A validated `/articles/stream` request: which articles, from where, how many, in which format.
///
/// **Thread safety:** value type; not shared.
struct ArticleStreamPlan {
    let format: StreamFormat
    let pages: ArticlePages
    /// Articles still to send when `count` was given (after a resume), else `nil`.
    let limit: Int?
    /// Whether `Last-Event-ID` moved the start.
    let isResume: Bool
    let retryMilliseconds: Int

    /// The largest `count` and `Last-Event-ID` accepted: far beyond any listing, small enough for
    /// page arithmetic never to overflow.
    static let maxPosition = 1_000_000_000

    // `borrowing`: read, not kept (an initializer would take it owned, a copy per request).
    init(context: borrowing RequestContext, _ upstream: borrowing UpstreamRoutes.Dependencies) throws(Problem) {
        let query = try QueryParameters(query: context.request, known: ArticleRoutes.streamParameters)
        let format = try StreamFormat.negotiate(
            format: query["format"],
            accept: context.request.headers["Accept"],
            allowed: [.sse, .ndjson]
        )
        let userId = try query.integer("userId", in: 1...Int.max)
        let count = try query.integer("count", in: 0...Self.maxPosition)
        var start = 0
        var isResume = false
        if format == .sse, let last = try ArticleRoutes.lastEventID(context, below: Self.maxPosition) {
            start = last + 1
            isResume = true
        }
        let configured = upstream.pageSize
        self.format = format
        self.limit = count.map { max(0, $0 - start) }
        self.isResume = isResume
        self.retryMilliseconds = upstream.retryMilliseconds
        self.pages = ArticlePages(
            client: upstream.client,
            userId: userId,
            pageSize: min(max(1, configured), 1_000),
            start: start,
            limit: limit,
            headers: context.upstreamHeaders
        )
    }
}
