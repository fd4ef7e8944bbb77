import Dispatch
import Foundation
import HTTPServer

/// The table of Spout's routes and the dispatch of one request through it.
enum Routes {
    typealias Handler = @Sendable (RequestContext) -> Void

    static func makeRouter() -> Router<Handler> {
        var router = Router<Handler>()
        router.add("GET", "/health", HealthRoutes.health)
        router.add("GET", "/ready", HealthRoutes.ready)
        router.add("GET", "/metrics", HealthRoutes.metrics)
        router.add("GET", "/sequences", SequenceRoutes.list)
        router.add("GET", "/sequences/{name}", SequenceRoutes.stream)
        router.add("GET", "/articles", ArticleRoutes.list)
        router.add("GET", "/articles/stream", ArticleRoutes.stream)
        router.add("GET", "/articles/{id}", ArticleRoutes.item)
        router.add("GET", "/users/{id}/profile", ProfileRoutes.profile)
        router.add("GET", "/dashboard/{userId}", DashboardRoutes.dashboard)
        router.add("GET", "/workflow/{userId}", WorkflowRoutes.workflow)
        for (pattern, handler) in DemoRoutes.table {
            router.add("GET", pattern, handler)
        }
        return router
    }

    /// Routes one request: CORS preflight, 404 and 405 as problems, otherwise the route's handler.
    static func dispatch(_ request: Request, responder: Responder, router: Router<Handler>, context: ServiceContext) {
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
        func make(_ route: String, _ parameters: [String: String] = [:], index: Int? = nil) -> RequestContext {
            RequestContext(
                request: request,
                route: route,
                parameters: parameters,
                responder: responder,
                service: context,
                routeMetrics: context.routeMetrics(index: index, route: route),
                startNanoseconds: start,
                receivedAt: Date(),
                correlation: correlation,
                isSelfCall: isSelfCall
            )
        }
        switch match {
        case .found(let route, let parameters):
            if method == "OPTIONS" {
                preflight(make(route.pattern, parameters, index: route.index))
            } else {
                route.handler(make(route.pattern, parameters, index: route.index))
            }
        case .methodNotAllowed(let allowed):
            let allowedWithOptions = allowed + ["OPTIONS"]
            // Counted under the route whose path it is (looked up again under a method it allows), not `unmatched`.
            let context: RequestContext
            if let method = allowed.first, case .found(let route, _) = router.match(method: method, path: Substring(request.path)) {
                context = make(route.pattern, index: route.index)
            } else {
                context = make("unmatched")
            }
            context.respond(
                problem: .methodNotAllowed(method, allowed: allowedWithOptions),
                headers: ["Allow": allowedWithOptions.joined(separator: ", ")]
            )
        case .notFound:
            make("unmatched").respond(problem: .notFound("nothing is served at \(clip(request.path))"))
        }
    }

    /// Answers a CORS preflight (or a plain `OPTIONS`) for an existing GET route.
    private static func preflight(_ context: RequestContext) {
        let headers = context.service.cors.preflightHeaders(
            origin: context.request.headers["Origin"],
            requestedHeaders: context.request.headers["Access-Control-Request-Headers"]
        )
        var all = headers
        all.add(name: "Allow", value: "GET, HEAD, OPTIONS")
        all.add(name: "X-Request-ID", value: context.correlation.requestID)
        context.responder.respond(status: .noContent, headers: all, body: [])
        context.routeMetrics.countRequest(status: 204)
    }

    /// Cuts hostile paths to a readable length for messages.
    static func clip(_ text: String) -> String {
        text.count <= 128 ? text : String(text.prefix(128)) + "…"
    }
}

/// `GET /health`, `GET /ready`, `GET /metrics`.
enum HealthRoutes {
    private static let healthBody = Array(#"{"status":"ok"}"#.utf8)

    /// Liveness: the process serves requests. Body exactly `{"status":"ok"}`.
    static let health: Routes.Handler = { context in
        context.respond(json: healthBody)
    }

    /// Readiness: `200 {"ready":true}` once started, `503` while starting or draining.
    static let ready: Routes.Handler = { context in
        let phase = context.service.readiness.current
        var object = JSONObjectWriter()
        object.add("ready", phase == .ready)
        switch phase {
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
    static let metrics: Routes.Handler = { context in
        let text = context.service.metrics.registry.render()
        context.respond(headers: ["Content-Type": "text/plain; version=0.0.4; charset=utf-8"], body: Array(text.utf8))
    }
}
