import EventLoops
import HTTPServer
import Reactive

/// `GET /dashboard/{userId}`: a user, their latest posts and their open todos, from three parallel
/// upstream calls joined with `Zip3`.
///
/// Each branch turns its failure into a value, so one failing branch leaves a partial dashboard with
/// an `errors` entry instead of losing the whole response; only when all three fail is the answer a
/// `502` problem (`504` when all three timed out), and a user the upstream does not know is `404`.
enum DashboardRoutes {
    /// Posts shown, newest (highest id) first.
    static let latestPostCount = 5

    /// The three branches' outcomes.
    typealias Outcome = (
        user: Result<User, UpstreamError>, posts: Result<[Post], UpstreamError>,
        todos: Result<[Todo], UpstreamError>
    )

    static let dashboard: Routes.Handler<UpstreamRoutes.Dependencies> = { context, dependencies in
        do throws(Problem) {
            let id = try ArticleRoutes.recordIdentifier(context, "userId")
            let upstream = dependencies.client
            let headers = context.upstreamHeaders
            let joined = Publishers.Zip3(
                settled(upstream.get(User.self, "/users/\(id)", headers: headers)),
                settled(upstream.get([Post].self, "/users/\(id)/posts", headers: headers)),
                settled(upstream.get([Todo].self, "/users/\(id)/todos", headers: headers))
            )
            let subscriber = SingleValueSubscriber<
                (
                    Result<User, UpstreamError>, Result<[Post], UpstreamError>,
                    Result<[Todo], UpstreamError>
                ), Never
            > { result in
                let answer: Result<[UInt8], Problem>
                let failure: UpstreamError?
                if case .success(let outcome)? = result {
                    answer = render(id: id, (outcome.0, outcome.1, outcome.2))
                    failure = firstFailure(outcome.0, outcome.1, outcome.2)
                } else {
                    answer = .failure(UpstreamReply.emptyProblem)
                    failure = nil
                }
                context.loop.execute {
                    switch answer {
                    case .success(let body): context.respond(json: body)
                    case .failure(let problem): context.respond(problem: problem, cause: failure)
                    }
                }
            }
            joined.subscribe(subscriber)
            context.cancelOnClientGone(subscriber)
        } catch {
            context.respond(problem: error)
        }
    }

    /// The first of the branches' failures, for the request log.
    private static func firstFailure<A, B, C>(
        _ a: Result<A, UpstreamError>,
        _ b: Result<B, UpstreamError>,
        _ c: Result<C, UpstreamError>
    ) -> UpstreamError? {
        if case .failure(let error) = a { return error }
        if case .failure(let error) = b { return error }
        if case .failure(let error) = c { return error }
        return nil
    }

    /// The branch's value or failure, as a value: the branch itself never fails.
    static func settled<T>(
        _ publisher: AnyPublisher<T, UpstreamError>
    ) -> AnyPublisher<Result<T, UpstreamError>, Never> {
        publisher
            .map { Result<T, UpstreamError>.success($0) }
            .catch { Just(Result<T, UpstreamError>.failure($0)) }
            .eraseToAnyPublisher()
    }

    /// The dashboard document, or the problem when there is nothing to show.
    static func render(id: Int, _ outcome: Outcome) -> Result<[UInt8], Problem> {
        if case .failure(let error) = outcome.user, case .status(_, 404, _) = error {
            return .failure(UpstreamReply.problem(for: error, notFound: "no user \(id)"))
        }
        var errors: [(part: String, error: UpstreamError)] = []
        var object = JSONObjectWriter()
        object.add("userId", id)
        switch outcome.user {
        case .success(let user): object.addRaw("user", json: user.jsonBytes)
        case .failure(let error):
            object.addNull("user")
            errors.append(("user", error))
        }
        switch outcome.posts {
        case .success(let posts):
            let latest = posts.sorted { $0.id > $1.id }.prefix(latestPostCount)
            object.addRaw("latestPosts", json: JSONText.array(latest) { $0.jsonBytes })
        case .failure(let error):
            object.addNull("latestPosts")
            errors.append(("latestPosts", error))
        }
        switch outcome.todos {
        case .success(let todos):
            object.addRaw("openTodos", json: JSONText.array(todos.filter { !$0.completed }) { $0.jsonBytes })
        case .failure(let error):
            object.addNull("openTodos")
            errors.append(("openTodos", error))
        }
        if errors.count == 3 {
            // Timeouts after several attempts come wrapped in `gaveUp`: the underlying failure decides.
            let allTimedOut = errors.allSatisfy { $0.error.isTimeout }
            let detail = errors.map { "\($0.part): \($0.error.description)" }.joined(separator: "; ")
            return .failure(
                Problem(
                    status: allTimedOut ? 504 : 502,
                    type: allTimedOut ? Problem.Kind.upstreamTimeout : Problem.Kind.upstreamFailed,
                    title: allTimedOut ? "Upstream timeout" : "Upstream failed",
                    detail: "every part of the dashboard failed: \(detail)"
                )
            )
        }
        object.addRaw(
            "errors",
            json: JSONText.array(errors) { entry in
                var problem = entry.error.problem
                problem.extensions.insert(("part", .string(entry.part)), at: 0)
                return problem.jsonBytes
            }
        )
        return .success(object.finish())
    }
}
