import Dispatch
import Foundation
import HTTPServer
import Reactive

/// One request on its way through a route: the request, its responder, the matched route and the
/// helpers that answer it while keeping the log and metrics right.
///
/// Every answer goes through ``respond(status:headers:body:)``, ``respond(problem:)`` or
/// ``startStream(headers:)`` so that CORS headers, the request log line and the metrics are never
/// forgotten by a route.
///
/// **Ownership:** created per request by the service; routes may capture it in callbacks.
///
/// **Thread safety:** confined to the connection's loop, like the responder it wraps.
struct RequestContext: Sendable {
    /// The request.
    let request: Request
    /// The matched route's pattern (`/sequences/{name}`), or a fixed label for unmatched requests.
    let route: String
    /// The `{name}` segments of the matched pattern.
    let parameters: [String: String]
    let responder: Responder
    let service: ServiceContext
    /// The metrics of ``route``, resolved once at start-up.
    let routeMetrics: RouteMetrics
    let startNanoseconds: UInt64
    let receivedAt: Date
    /// The request ID and trace context, echoed, logged and forwarded upstream.
    let correlation: RequestCorrelation
    /// Whether this is the demo upstream's call to the service itself (see ``SelfCall``): not client traffic.
    let isSelfCall: Bool

    /// The headers every upstream call made for this request carries (`X-Request-ID`, `traceparent`,
    /// `tracestate`); see ``RequestCorrelation/correlationHeaders``.
    var correlationHeaders: [String: String] { correlation.correlationHeaders }

    /// The loop the request arrived on.
    var loop: EventLoop { responder.loop }

    /// Cancels `work` if the client leaves before the answer (see `Responder.onAbandon(_:)`); for
    /// routes that wait on upstream calls before they answer. Call on the loop.
    func cancelOnClientGone(_ work: any Cancellable) {
        responder.onAbandon { work.cancel() }
    }

    /// Answers with a complete body.
    func respond(status: Status = .ok, headers: Headers = [:], body: [UInt8]) {
        respond(status: status, headers: headers, body: body, upstreamFailure: nil)
    }

    private func respond(status: Status, headers: Headers, body: [UInt8], upstreamFailure: UpstreamFailureSummary?) {
        var headers = headers
        finishHeaders(&headers)
        responder.respond(status: status, headers: headers, body: body)
        record(status: status.code, bytes: request.method == .head ? 0 : body.count, upstreamFailure: upstreamFailure)
    }

    /// Adds what every response of this request carries: the CORS headers for its `Origin` and `X-Request-ID`.
    func finishHeaders(_ headers: inout Headers) {
        service.cors.apply(to: &headers, origin: request.headers["Origin"])
        headers.add(name: "X-Request-ID", value: correlation.requestID)
    }

    /// Answers with a JSON body.
    func respond(status: Status = .ok, json body: [UInt8]) {
        guard let headers = service.jsonHeadersForAnyOrigin else {
            respond(status: status, headers: ["Content-Type": "application/json"], body: body)
            return
        }
        // The same fields, in the same order, as `respond(status:headers:body:)` makes when every origin is allowed.
        var withID = headers
        withID.add(name: "X-Request-ID", value: correlation.requestID)
        responder.respond(status: status, headers: withID, body: body)
        record(status: status.code, bytes: request.method == .head ? 0 : body.count)
    }

    /// Answers with an `application/problem+json` body; the instance is this request's path. The request log
    /// records the upstream failure behind it: `cause` when given, else what the problem's members tell.
    func respond(problem: Problem, headers: Headers = [:], cause: UpstreamError? = nil) {
        let problem = instanced(problem)
        var headers = headers
        headers.replaceOrAdd(name: "Content-Type", value: Problem.mediaType)
        respond(status: Status(code: problem.status),
            headers: headers, body: problem.jsonBytes,
            upstreamFailure: cause.map(UpstreamFailureSummary.init) ?? UpstreamFailureSummary(problem: problem))
    }

    /// `problem` with this request's path as its instance, unless it names one already.
    func instanced(_ problem: Problem) -> Problem {
        var problem = problem
        if problem.instance == nil { problem.instance = Routes.clip(request.path) }
        return problem
    }

    /// Starts a `200` SSE or NDJSON response of `mediaType`, with `Cache-Control: no-cache` and
    /// `X-Accel-Buffering: no` (so that proxies pass each event on at once). A `HEAD` request gets the
    /// head alone and is recorded as a completed stream: then `nil` comes back, as there is nothing
    /// to produce. Otherwise the caller reports the end with ``streamEnded(_:)``.
    func startEventStream(mediaType: String) -> BodyWriter? {
        let writer = startStream(headers: [
            "Content-Type": mediaType,
            "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no",
        ])
        guard request.method != .head else {
            writer.finish()
            streamEnded(StreamSummary(events: 0, bytes: 0, end: .completed))
            return nil
        }
        return writer
    }

    /// Starts a `200` streamed response; the caller reports its end with ``streamEnded(_:)``.
    func startStream(headers: Headers) -> BodyWriter {
        var headers = headers
        finishHeaders(&headers)
        service.metrics.activeStreams.add(1)
        return responder.startStreaming(status: .ok, headers: headers)
    }

    /// Records a streamed response that ended.
    func streamEnded(_ summary: StreamSummary) {
        service.metrics.activeStreams.add(-1)
        service.metrics.eventsSent.increment(by: summary.events)
        service.metrics.streamsEnded.increment([summary.end.rawValue])
        record(status: 200, bytes: summary.bytes, events: summary.events, end: summary.end)
    }

    private func record(
        status: Int,
        bytes: Int,
        events: Int? = nil,
        end: StreamEnd? = nil,
        upstreamFailure: UpstreamFailureSummary? = nil
    ) {
        if isSelfCall && !service.configuration.log.selfCalls { return }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds &- startNanoseconds) / 1e9
        routeMetrics.record(status: status, seconds: elapsed)
        guard let sink = service.log else { return }
        var entry = RequestLogEntry(
            time: receivedAt,
            method: request.method.rawValue,
            path: request.path,
            status: status,
            durationSeconds: elapsed,
            bytes: bytes,
            events: events,
            end: end
        )
        entry.query = request.query
        entry.redaction = service.queryRedaction
        entry.route = route
        entry.correlation = correlation
        entry.remoteAddress = request.remoteAddress.isEmpty ? nil : request.remoteAddress
        entry.userAgent = request.headers["User-Agent"]
        entry.upstreamFailure = upstreamFailure
        sink.write(line: entry.jsonBytes)
    }
}

/// What every route shares: configuration, metrics, the log, CORS policy and per-loop timers.
///
/// **Ownership:** created once by ``SpoutService``.
///
/// **Thread safety:** immutable references to thread-safe objects; the tickers are loop-confined
/// and looked up by loop.
final class ServiceContext: Sendable {
    let configuration: SpoutConfiguration
    let metrics: SpoutMetrics
    let log: (any LogSink)?
    let cors: CORSPolicy
    let readiness: Readiness
    let hooks: ServiceHooks
    /// `Content-Type: application/json` and the CORS header, built once, when every origin is allowed.
    let jsonHeadersForAnyOrigin: Headers?
    /// The metrics of each route, by ``Router/Route/index``.
    let routeMetrics: [RouteMetrics]
    /// The metrics of requests that matched no route.
    let unmatchedMetrics: RouteMetrics
    /// The outbound client for the article routes.
    let upstream: UpstreamClient
    /// The query parameters the request log does not show the values of.
    let queryRedaction: QueryRedaction
    private let tickers: [ObjectIdentifier: HeartbeatTicker]

    init(
        configuration: SpoutConfiguration,
        metrics: SpoutMetrics,
        log: (any LogSink)?,
        readiness: Readiness,
        loops: [EventLoop],
        routes: [String] = [],
        hooks: ServiceHooks = ServiceHooks()
    ) {
        self.hooks = hooks
        self.routeMetrics = routes.map { RouteMetrics(route: $0, metrics: metrics) }
        self.unmatchedMetrics = RouteMetrics(route: "unmatched", metrics: metrics)
        self.configuration = configuration
        self.metrics = metrics
        self.log = log
        self.cors = CORSPolicy(allowedOrigins: configuration.cors.allowedOrigins)
        if cors.allowsAny {
            var headers: Headers = ["Content-Type": "application/json"]
            cors.apply(to: &headers, origin: nil)
            jsonHeadersForAnyOrigin = headers
        } else {
            jsonHeadersForAnyOrigin = nil
        }
        self.readiness = readiness
        self.queryRedaction = QueryRedaction(configuration.log.redactQueryParameters)
        self.upstream = UpstreamClient(
            configuration: configuration.upstream,
            baseURL: configuration.upstream.baseURL.isEmpty ? nil : URL(string: configuration.upstream.baseURL),
            metrics: metrics,
            eventLoopQueues: loops.map(\.queue)
        )
        let heartbeat = Duration.milliseconds(Int64((configuration.sse.heartbeatSeconds * 1000).rounded()))
        var tickers: [ObjectIdentifier: HeartbeatTicker] = [:]
        for loop in loops {
            tickers[ObjectIdentifier(loop)] = HeartbeatTicker(loop: loop, heartbeat: heartbeat)
        }
        self.tickers = tickers
    }

    /// The heartbeat ticker of `loop`.
    func heartbeats(on loop: EventLoop) -> HeartbeatTicker? {
        tickers[ObjectIdentifier(loop)]
    }

    func stopTimers() {
        for ticker in tickers.values { ticker.cancel() }
    }
}

extension ServiceContext {
    /// The metrics of the route at `index` of the router, or of `route` when it is not one of them (a router
    /// built elsewhere, or no index).
    func routeMetrics(index: Int?, route: String) -> RouteMetrics {
        if let index, routeMetrics.indices.contains(index), routeMetrics[index].route == route {
            return routeMetrics[index]
        }
        return route == unmatchedMetrics.route ? unmatchedMetrics : RouteMetrics(route: route, metrics: metrics)
    }
}
