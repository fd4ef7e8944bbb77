import Dispatch
import EventLoops
import HTTPServer
import Reactive

/// `GET /workflow/{userId}`: a coordinated pipeline over the upstream, streamed step by step.
///
/// Over SSE (or NDJSON) each step's completion is an `event: step` and the summary is the last
/// event; with `Accept: application/json` the answer is the summary alone. A failing step ends the
/// stream with `event: error` (or answers with its problem). A client that leaves mid-way cancels
/// the upstream requests still outstanding.
///
/// Over SSE every event has an id — the step's number, 1 to 4, and 5 for the summary — and the stream
/// ends with the same `event: end` frame as every other stream, so an `EventSource` knows it is done.
/// It reconnects anyway (a closed stream looks like a drop), with `Last-Event-ID`:
///
/// - after the summary (`5`): `204`, which stops `EventSource`'s reconnects;
/// - mid-workflow (`1`…`4`): the workflow runs again and only the events after that id are sent. The
///   choice is to rerun, not to replay a per-client cache of finished steps: the steps are idempotent
///   `GET`s that the client's response cache already holds for `upstream.cacheTTLSeconds` (so a resume
///   within that time costs the upstream nothing for the finished steps), the summary is then computed
///   from the same data as the steps it follows, and no per-client state has to be kept — or found
///   again by a reconnect that a load balancer sends to another instance;
/// - anything that is not such an id: `400`.
enum WorkflowRoutes {
    /// The query parameters `/workflow/{userId}` understands.
    static let parameters: [String] = ["format"]

    static let workflow: Routes.Handler<UpstreamRoutes.Dependencies> = { context, upstream in
        do throws(Problem) {
            let query = try QueryParameters(query: context.request, known: parameters)
            let format = try StreamFormat.negotiate(format: query["format"], accept: context.request.headers["Accept"])
            let id = try ArticleRoutes.pathIdentifier(context, "userId")
            let resumeAfter = format == .sse ? try ArticleRoutes.lastEventID(context, below: Int.max) : nil
            if let resumeAfter, resumeAfter >= Workflow.summaryID {
                // The summary was delivered: 204 stops EventSource's reconnects.
                context.respond(status: .noContent, body: [])
                return
            }
            var events = Workflow(client: upstream.client, userId: id, headers: context.upstreamHeaders)
                .events()
            if let resumeAfter, resumeAfter > 0 {
                events = events.filter { event in event.id.flatMap { Int($0) }.map { $0 > resumeAfter } ?? true }
                    .eraseToAnyPublisher()
            }
            switch format {
            case .json:
                respondSummary(events, context)
            case .sse:
                let encoder = SSEJSONEncoder(retryMilliseconds: upstream.retryMilliseconds)
                startStream(events, context, encoder: encoder, mediaType: format.mediaType)
            case .ndjson:
                startStream(events, context, encoder: NDJSONEventEncoder(), mediaType: format.mediaType)
            }
        } catch {
            context.respond(problem: error)
        }
    }

    private static func respondSummary(
        _ events: AnyPublisher<JSONStreamEvent, WorkflowFailure>,
        _ context: RequestContext
    ) {
        let subscriber = SingleValueSubscriber<JSONStreamEvent, WorkflowFailure> { result in
            context.loop.execute {
                switch result {
                case .success(let summary)?: context.respond(json: summary.json)
                case .failure(let failure)?: context.respond(problem: failure.problem, cause: failure.error)
                case nil: context.respond(problem: UpstreamReply.emptyProblem)
                }
            }
        }
        events.filter { $0.event == Workflow.summaryEvent }.subscribe(subscriber)
        context.cancelOnClientGone(subscriber)
    }

    private static func startStream<E: StreamEncoder>(
        _ events: AnyPublisher<JSONStreamEvent, WorkflowFailure>,
        _ context: RequestContext,
        encoder: E,
        mediaType: String
    ) where E.Element == JSONStreamEvent {
        guard let writer = context.startEventStream(mediaType: mediaType) else { return }
        let bridge = DemandBridge<E, WorkflowFailure>(
            writer: writer,
            encoder: encoder,
            heartbeats: context.heartbeats,
            failureProblem: { failure in
                context.noteUpstreamFailure(failure.error)
                return context.instanced(failure.problem)
            },
            onEnd: { summary in context.streamEnded(summary) }
        )
        events.subscribe(bridge)
    }
}

/// A failed workflow step: the problem a client sees (naming the step) and the upstream failure behind it,
/// for the request log.
///
/// **Thread safety:** value type.
struct WorkflowFailure: Error, Sendable {
    var problem: Problem
    var error: UpstreamError
}

/// The workflow for one user, as a publisher of its events:
///
/// 1. `user`: `GET /users/{id}`;
/// 2. `activity`: `GET /users/{id}/posts`, `/todos` and `/albums` in parallel (`Zip3`);
/// 3. `comments`: `GET /posts/{latest}/comments` for the user's latest post (needs step 2; skipped
///    when the user has no posts);
/// 4. `summary`: the summary built from all of it.
///
/// Each step's completion is an `event: step` (`{"step":n,"name":…,"durationMs":…,…}`) with id `n`; the
/// summary follows as the last event, `event: summary`, with id ``summaryID``. A failing step fails
/// the publisher with its problem (which names the step) and the upstream failure behind it. Nothing
/// starts before a subscriber asks, and cancelling cancels the requests in flight.
///
/// **Thread safety:** a value; the publisher it makes is safe to subscribe from any thread.
struct Workflow: Sendable {
    /// The `event:` name of a step's completion.
    static let stepEvent = "step"
    /// The `event:` name of the summary.
    static let summaryEvent = "summary"
    /// The id of the summary event: after the four steps' ids, 1 to 4.
    static let summaryID = 5

    let client: UpstreamClient
    let userId: Int
    /// Extra header fields of the upstream calls (correlation fields).
    var headers: [String: String] = [:]

    /// The events of one run; each subscription runs the workflow anew.
    func events() -> AnyPublisher<JSONStreamEvent, WorkflowFailure> {
        let calls = Calls(client: client, headers: headers)
        let id = userId
        return Deferred { () -> AnyPublisher<JSONStreamEvent, WorkflowFailure> in
            let started = DispatchTime.now().uptimeNanoseconds
            return Self.timed(calls.get(User.self, "/users/\(id)"), step: "user", notFound: "no user \(id)")
                .flatMap(maxPublishers: .max(1)) {
                    user,
                    userSeconds -> AnyPublisher<JSONStreamEvent, WorkflowFailure> in
                    let first = Self.step(1, "user", userSeconds) { $0.add("username", user.username) }
                    let rest = Self.activity(calls: calls, user: user, started: started, userSeconds: userSeconds)
                    return Just(first).setFailureType(to: WorkflowFailure.self).append(rest).eraseToAnyPublisher()
                }
                .eraseToAnyPublisher()
        }
        .eraseToAnyPublisher()
    }

    /// Steps 2 to 4, once the user is known.
    private static func activity(
        calls: Calls,
        user: User,
        started: UInt64,
        userSeconds: Double
    ) -> AnyPublisher<JSONStreamEvent, WorkflowFailure> {
        let lists = Publishers.Zip3(
            calls.get([Post].self, "/users/\(user.id)/posts"),
            calls.get([Todo].self, "/users/\(user.id)/todos"),
            calls.get([Album].self, "/users/\(user.id)/albums")
        )
        .map { (posts: $0.0, todos: $0.1, albums: $0.2) }
        .eraseToAnyPublisher()
        return timed(lists, step: "activity", notFound: nil)
            .flatMap(maxPublishers: .max(1)) { lists, listSeconds -> AnyPublisher<JSONStreamEvent, WorkflowFailure> in
                let second = step(2, "activity", listSeconds) { object in
                    object.add("posts", lists.posts.count)
                    object.add("todos", lists.todos.count)
                    object.add("albums", lists.albums.count)
                }
                var report = Report(user: user, posts: lists.posts, todos: lists.todos, albums: lists.albums)
                report.steps = [("user", userSeconds), ("activity", listSeconds)]
                guard let latest = lists.posts.max(by: { $0.id < $1.id }) else {
                    let third = step(3, "comments", 0) { $0.add("skipped", true) }
                    report.steps.append(("comments", 0))
                    return Publishers.Sequence<[JSONStreamEvent], WorkflowFailure>(
                        sequence: [second, third] + finish(report, started: started)
                    )
                    .eraseToAnyPublisher()
                }
                let commentsOfLatest = calls.get([Comment].self, "/posts/\(latest.id)/comments")
                let comments = timed(commentsOfLatest, step: "comments", notFound: nil)
                    .flatMap(maxPublishers: .max(1)) { comments, commentSeconds in
                        let third = step(3, "comments", commentSeconds) { object in
                            object.add("postId", latest.id)
                            object.add("comments", comments.count)
                        }
                        var report = report
                        report.latest = (latest, comments)
                        report.steps.append(("comments", commentSeconds))
                        let events = [third] + finish(report, started: started)
                        return Publishers.Sequence<[JSONStreamEvent], WorkflowFailure>(sequence: events)
                    }
                return Just(second).setFailureType(to: WorkflowFailure.self).append(comments).eraseToAnyPublisher()
            }
            .eraseToAnyPublisher()
    }

    /// Step 4 and the summary (whose `steps` list the fetching steps 1 to 3).
    private static func finish(_ report: Report, started: UInt64) -> [JSONStreamEvent] {
        let building = DispatchTime.now().uptimeNanoseconds
        let summary = report.summaryJSON(totalSeconds: seconds(since: started))
        let fourth = step(4, "summary", seconds(since: building)) { _ in }
        return [fourth, JSONStreamEvent(id: String(summaryID), event: summaryEvent, json: summary)]
    }

    /// The upstream calls of one run, with the run's header fields.
    private struct Calls: Sendable {
        let client: UpstreamClient
        let headers: [String: String]

        func get<T: Decodable>(_ type: T.Type, _ path: String) -> AnyPublisher<T, UpstreamError> {
            client.get(type, path, headers: headers)
        }
    }

    /// The `event: step` for step `number`, with extra fields from `fields`.
    private static func step(
        _ number: Int,
        _ name: String,
        _ seconds: Double,
        _ fields: (inout JSONObjectWriter) -> Void
    ) -> JSONStreamEvent {
        var object = JSONObjectWriter()
        object.add("step", number)
        object.add("name", name)
        object.add("durationMs", seconds * 1000, fractionDigits: 2)
        fields(&object)
        return JSONStreamEvent(id: String(number), event: stepEvent, json: object.finish())
    }

    /// `publisher`'s value with the seconds it took from subscription, its failure as the step's problem.
    private static func timed<T>(
        _ publisher: AnyPublisher<T, UpstreamError>,
        step: String,
        notFound: String?
    ) -> AnyPublisher<(T, Double), WorkflowFailure> {
        Deferred { () -> AnyPublisher<(T, Double), WorkflowFailure> in
            let start = DispatchTime.now().uptimeNanoseconds
            return
                publisher
                .map { ($0, seconds(since: start)) }
                .mapError { error in
                    var problem = UpstreamReply.problem(for: error, notFound: notFound)
                    problem.detail = "workflow step \"\(step)\" failed: \(problem.detail)"
                    problem.extensions.append(("step", .string(step)))
                    return WorkflowFailure(problem: problem, error: error)
                }
                .eraseToAnyPublisher()
        }
        .eraseToAnyPublisher()
    }

    private static func seconds(since start: UInt64) -> Double {
        Double(DispatchTime.now().uptimeNanoseconds &- start) / 1e9
    }

    /// What the summary is made of.
    private struct Report {
        var user: User
        var posts: [Post]
        var todos: [Todo]
        var albums: [Album]
        var latest: (post: Post, comments: [Comment])?
        var steps: [(name: String, seconds: Double)] = []

        init(user: User, posts: [Post], todos: [Todo], albums: [Album]) {
            self.user = user
            self.posts = posts
            self.todos = todos
            self.albums = albums
        }

        func summaryJSON(totalSeconds: Double) -> [UInt8] {
            var object = JSONObjectWriter()
            object.addRaw("user", json: user.jsonBytes)
            object.add("posts", posts.count)
            object.add("albums", albums.count)
            var todoCounts = JSONObjectWriter()
            let open = todos.filter { !$0.completed }.count
            todoCounts.add("open", open)
            todoCounts.add("completed", todos.count - open)
            object.addRaw("todos", json: todoCounts.finish())
            if let latest {
                var post = JSONObjectWriter()
                post.add("id", latest.post.id)
                post.add("title", latest.post.title)
                post.add("comments", latest.comments.count)
                var commenters: [String] = []
                for comment in latest.comments where !commenters.contains(comment.email) {
                    commenters.append(comment.email)
                }
                post.addRaw(
                    "commenters",
                    json: JSONText.array(commenters) { email in
                        var bytes: [UInt8] = []
                        JSONText.appendString(email, to: &bytes)
                        return bytes
                    }
                )
                object.addRaw("latestPost", json: post.finish())
            } else {
                object.addNull("latestPost")
            }
            object.addRaw(
                "steps",
                json: JSONText.array(steps) { step in
                    var entry = JSONObjectWriter()
                    entry.add("name", step.name)
                    entry.add("durationMs", step.seconds * 1000, fractionDigits: 2)
                    return entry.finish()
                }
            )
            object.add("durationMs", totalSeconds * 1000, fractionDigits: 2)
            return object.finish()
        }
    }
}
