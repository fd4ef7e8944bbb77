import EventLoops
import HTTPServer

// CORS preflights.
extension RequestContext {
    /// Answers a CORS preflight (or a plain `OPTIONS`) for an existing route: `204`, counted but not logged.
    func respondToPreflight(methods: [String] = ["GET", "HEAD", "OPTIONS"]) {
        let allowed = methods.joined(separator: ", ")
        var headers = services.cors.preflightHeaders(
            origin: request.headers["Origin"],
            requestedHeaders: request.headers["Access-Control-Request-Headers"],
            methods: allowed
        )
        headers.add(name: "Allow", value: allowed)
        emit(status: .noContent, headers: headers, body: [])
        routeMetrics.countRequest(status: 204)
    }
}
