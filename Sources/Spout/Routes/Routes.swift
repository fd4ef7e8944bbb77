import Dispatch
import Foundation
import HTTPServer
import Redis

/// The table of Spout's routes and the dispatch of one request through it.
enum Routes {
    /// A route's handler: the request, and what its group of routes uses (``RouteDependencies``).
    typealias Handler<Dependencies> = @Sendable (RequestContext, Dependencies) -> Void
    /// The handler of a route that uses nothing of the service beyond its request context.
    typealias PlainHandler = @Sendable (RequestContext) -> Void

    /// A registered route: its handler, which picks its group's share of ``RouteDependencies``, and how its
    /// responses are labelled.
    ///
    /// **Thread safety:** immutable.
    struct Entry: Sendable {
        let handler: Handler<RouteDependencies>
        let policy: ResponsePolicy
    }

    /// Every route. Each `GET` here answers `HEAD` and `OPTIONS` too, and each must have its operation in
    /// ``SpoutAPI/operations`` (the OpenAPI document served at `/openapi.json`; a test compares the two).
    static func makeRouter(configuration: SpoutConfiguration = SpoutConfiguration()) -> Router<Entry> {
        var router = Router<Entry>()
        func add(_ pattern: String, _ policy: ResponsePolicy, _ handler: @escaping Handler<RouteDependencies>) {
            router.add("GET", pattern, Entry(handler: handler, policy: policy))
        }
        // Each handler is given its group's dependencies only.
        func add(_ pattern: String, _ policy: ResponsePolicy, _ handler: @escaping PlainHandler) {
            add(pattern, policy) { context, _ in handler(context) }
        }
        add("/health", .noStore, HealthRoutes.health)
        add("/ready", .noStore) { HealthRoutes.ready($0, $1.health) }
        add("/metrics", .noStore) { HealthRoutes.metrics($0, $1.health) }
        add("/openapi.json", .plain) { DocumentRoutes.openAPI($0, $1.documents) }
        add("/problems/{type}", .plain, DocumentRoutes.problemType)
        add("/", .plain, ClientRoutes.index)
        add("/client/spout.js", .plain, ClientRoutes.client)
        add("/client/spout.d.ts", .plain, ClientRoutes.declarations)
        add("/sequences", .plain) { SequenceRoutes.list($0, $1.sequences) }
        add("/sequences/{name}", .negotiated) { SequenceRoutes.stream($0, $1.sequences) }
        add("/articles", .upstreamJSON) { ArticleRoutes.list($0, $1.upstream) }
        add("/articles/stream", .negotiated) { ArticleRoutes.stream($0, $1.upstream) }
        add("/articles/{id}", .upstreamJSON) { ArticleRoutes.item($0, $1.upstream) }
        add("/users/{id}/profile", .upstreamJSON) { ProfileRoutes.profile($0, $1.upstream) }
        add("/dashboard/{userId}", .negotiated) { DashboardRoutes.dashboard($0, $1.upstream) }
        add("/workflow/{userId}", .negotiated) { WorkflowRoutes.workflow($0, $1.upstream) }
        for (pattern, handler) in DemoRoutes.table {
            add(pattern, .demo) { handler($0, $1.upstream) }
        }
        add("/channels", .noStore) { ChannelRoutes.list($0, $1.channels) }
        add("/channels/{name}", .negotiated) { ChannelRoutes.subscribe($0, $1.channels) }
        add("/channels/{name}/latest", .noStore) { ChannelRoutes.latest($0, $1.channels) }
        add("/subscribe", .negotiated) { ChannelMultiRoutes.subscribe($0, $1.channels) }
        add("/channels/{name}/presence", .noStore) { ChannelRoutes.presence($0, $1.channels) }
        router.add(
            "POST",
            "/channels/{name}/events",
            maxBodyBytes: configuration.limits.maxBodyBytes,
            Entry(handler: { ChannelRoutes.publish($0, $1.channels) }, policy: .noStore)
        )
        return router
    }

    /// The `/demo` routes only: what the service's own loopback listener for the demo upstream serves when its
    /// port is HTTPS (everything else there is a 404).
    static func makeDemoRouter() -> Router<Entry> {
        var router = Router<Entry>()
        for (pattern, handler) in DemoRoutes.table {
            router.add("GET", pattern, Entry(handler: { handler($0, $1.upstream) }, policy: .demo))
        }
        return router
    }

    /// Routes one request: CORS preflight, 404 and 405 as problems, otherwise the route's handler.
    /// The request is taken (`consuming`) and moved into the route's ``RequestContext``: one owner, no copy.
    static func dispatch(
        _ request: consuming Request,
        responder: Responder,
        router: Router<Entry>,
        context: ServiceContext
    ) {
        let start = DispatchTime.now().uptimeNanoseconds
        let method = request.method.rawValue
        let lookupMethod = method == "OPTIONS" ? "GET" : method
        let match = router.match(method: lookupMethod, path: Substring(request.path))
        let headers = request.headers
        let traceparent = headers["traceparent"]
        let correlation = RequestCorrelation(
            requestID: headers["X-Request-ID"],
            traceparent: traceparent,
            tracestate: traceparent == nil ? nil : headers.values(for: "tracestate").joined(separator: ",")
        )
        let isSelfCall = SelfCall.isSelfCall(
            path: request.path,
            remoteAddress: request.remoteAddress,
            headerValue: headers[SelfCall.headerName]
        )
        // Each way through the switch below makes one context, the request's last use (moved into it).
        func make(
            _ request: consuming Request,
            _ route: String,
            _ parameters: PathParameters = [:],
            index: Int? = nil,
            policy: ResponsePolicy = .plain
        ) -> RequestContext {
            RequestContext(
                request: request,
                route: route,
                parameters: parameters,
                responder: responder,
                services: context.responding,
                routeMetrics: context.routeMetrics(index: index, route: route),
                responses: context.responses(for: policy),
                startNanoseconds: start,
                receivedAt: Date(),
                correlation: correlation,
                isSelfCall: isSelfCall
            )
        }
        switch match {
        case .found(let route, let parameters):
            let requestContext = make(
                request,
                route.pattern,
                parameters,
                index: route.index,
                policy: route.handler.policy
            )
            if method == "OPTIONS" {
                requestContext.respondToPreflight()
            } else {
                route.handler.handler(requestContext, context.routes)
            }
        case .methodNotAllowed(let allowed) where method == "OPTIONS":
            // A preflight (or plain OPTIONS) for a path that takes other methods than GET (a POST route).
            guard let first = allowed.first,
                case .found(let route, let parameters) = router.match(method: first, path: Substring(request.path))
            else {
                let problem = Problem.notFound("nothing is served at \(clip(request.path))")
                make(request, "unmatched").respond(problem: problem)
                return
            }
            make(request, route.pattern, parameters, index: route.index, policy: route.handler.policy)
                .respondToPreflight(methods: allowed + ["OPTIONS"])
        case .methodNotAllowed(let allowed):
            let allowedWithOptions = allowed + ["OPTIONS"]
            // Counted under the route whose path it is (looked up again under a method it allows), not `unmatched`.
            let context: RequestContext
            if let method = allowed.first,
                case .found(let route, _) = router.match(method: method, path: Substring(request.path))
            {
                context = make(request, route.pattern, index: route.index)
            } else {
                context = make(request, "unmatched")
            }
            context.respond(
                problem: .methodNotAllowed(method, allowed: allowedWithOptions),
                headers: ["Allow": allowedWithOptions.joined(separator: ", ")]
            )
        case .notFound:
            let problem = Problem.notFound("nothing is served at \(clip(request.path))")
            make(request, "unmatched").respond(problem: problem)
        }
    }

    /// Cuts hostile paths to a readable length for messages.
    static func clip(_ text: String) -> String {
        text.count <= 128 ? text : String(text.prefix(128)) + "…"
    }

    /// The header field `name`'s one value, if it is present; `400` (`invalid-parameter`) when it is repeated: for a
    /// credential or a key, which of two counts is not for the server to guess.
    static func singleHeader(_ name: String, in headers: Headers) throws(Problem) -> String? {
        let values = headers.values(for: name)
        guard values.count <= 1 else {
            throw .invalidParameter(name, "the \(name) header is given \(values.count) times; send it once")
        }
        return values.first
    }
}

/// `GET /health`, `GET /ready`, `GET /metrics`.
enum HealthRoutes {
    /// What `/ready` and `/metrics` read.
    ///
    /// **Thread safety:** immutable references to thread-safe objects.
    struct Dependencies: Sendable {
        /// The service's phase.
        let readiness: Readiness
        /// The channels' Redis broker, whose connection `/ready` reports; nil without Redis.
        let redis: RedisChannelBroker?
        /// `channels.redisReadiness`.
        let redisReadiness: SpoutConfiguration.Channels.RedisReadiness
        /// The metrics `/metrics` renders.
        let registry: MetricsRegistry
    }

    private static let healthBody = Array(#"{"status":"ok"}"#.utf8)

    /// Liveness: the process serves requests. Body exactly `{"status":"ok"}`.
    static let health: Routes.PlainHandler = { context in
        context.respond(json: healthBody)
    }

    /// Readiness: `200 {"ready":true}` once started, `503` while starting or draining. With channels over Redis
    /// the body names Redis's state (`"redis":"connected"`, …), and with `channels.redisReadiness` `fail` a Redis
    /// that is not connected makes it `503` (`"reason":"redis"`).
    static let ready: Routes.Handler<Dependencies> = { context, health in
        let phase = health.readiness.current
        let redis = health.redis?.status
        let redisFails = redis.map {
            !$0.isConnected && health.redisReadiness == .fail
        }
        var object = JSONObjectWriter()
        object.add("ready", phase == .ready && redisFails != true)
        if let redis { object.add("redis", redis.description) }
        switch phase {
        case .ready where redisFails == true:
            object.add("reason", "redis")
            context.respond(status: .serviceUnavailable, json: object.finish())
        case .ready: context.respond(json: object.finish())
        case .starting:
            object.add("reason", "starting")
            context.respond(status: .serviceUnavailable, json: object.finish())
        case .draining:
            object.add("reason", "draining")
            context.respond(status: .serviceUnavailable, json: object.finish())
        }
    }

    /// Prometheus text exposition.
    static let metrics: Routes.Handler<Dependencies> = { context, health in
        let text = health.registry.render()
        context.respond(headers: ["Content-Type": "text/plain; version=0.0.4; charset=utf-8"], body: Array(text.utf8))
    }
}
