import Dispatch
import Foundation
import HTTPServer
import Reactive

/// One request on its way through a route: the request, its responder, the matched route and the
/// helpers that answer it while keeping the headers, the log and the metrics right.
///
/// Every answer goes through ``respond(status:headers:body:)``, ``respond(status:json:)``,
/// ``respond(problem:headers:)`` or ``startStream(headers:)`` so that a route cannot forget CORS, `Vary`,
/// `Cache-Control`, `gzip`, the request log line or the metrics. Whatever the route, every response head
/// (complete, `304`, preflight or stream) ends with `X-Request-ID`, added in one place for complete heads
/// (``emit(status:headers:tag:body:)``) and one for streamed ones (``finishHead(_:)``).
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
    let parameters: PathParameters
    let responder: Responder
    let service: ServiceContext
    /// The metrics of ``route``, resolved once at start-up.
    let routeMetrics: RouteMetrics
    /// The headers this route's responses carry (its ``ResponsePolicy``), resolved once at start-up.
    let responses: RouteResponses
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

    /// Answers with a complete body; `headers` should name its `Content-Type`. A JSON body may go out
    /// `gzip`-coded (see ``send(status:headers:body:compressible:validator:)``).
    func respond(status: Status = .ok, headers: Headers = [:], body: [UInt8]) {
        respond(status: status, headers: headers, body: body, validator: nil)
    }

    /// ``respond(status:headers:body:)`` for a body identified by `validator`; check ``respondNotModified(_:contentType:)``
    /// first. `upstreamFailure` is what the request log records for a problem caused upstream.
    func respond(
        status: Status = .ok,
        headers: consuming Headers,
        body: [UInt8],
        validator: Validator?,
        upstreamFailure: UpstreamFailureSummary? = nil
    ) {
        let compressible = responses.compresses && Self.isCompressible(contentType: headers["Content-Type"])
        service.cors.apply(to: &headers, origin: request.headers["Origin"])
        responses.label(&headers, status: status, compressible: compressible)
        if let validator { headers.add(name: "Cache-Control", value: validator.cacheControl) }
        send(
            status: status,
            headers: headers,
            body: body,
            compressible: compressible,
            tag: validator?.tag,
            upstreamFailure: upstreamFailure
        )
    }

    /// Answers with a JSON body.
    func respond(status: Status = .ok, json body: [UInt8]) {
        respond(status: status, json: body, validator: nil)
    }

    /// Answers with a JSON body identified by `validator` (its `ETag` and `Cache-Control` are added); check
    /// ``respondNotModified(_:contentType:)`` first.
    func respond(status: Status = .ok, json body: [UInt8], validator: Validator?) {
        var headers: Headers
        if let prebuilt = responses.jsonHeaders(status: status, cacheControl: validator?.cacheControl) {
            // The fields the branch below makes when every origin is allowed, built once.
            headers = prebuilt
        } else {
            headers = ["Content-Type": "application/json"]
            service.cors.apply(to: &headers, origin: request.headers["Origin"])
            responses.label(&headers, status: status, compressible: responses.compresses)
            if let validator { headers.add(name: "Cache-Control", value: validator.cacheControl) }
        }
        send(status: status, headers: headers, body: body, compressible: responses.compresses, tag: validator?.tag)
    }

    /// Answers with an `application/problem+json` body; the instance is this request's path. The request log
    /// records the upstream failure behind it: `cause` when given, else what the problem's members tell.
    func respond(problem: Problem, headers: Headers = [:], cause: UpstreamError? = nil) {
        let problem = instanced(problem)
        var headers = headers
        headers.replaceOrAdd(name: "Content-Type", value: Problem.mediaType)
        if problem.status == 503, let seconds = cause?.retryAfterSeconds {
            // The upstream's own wait: a client retrying sooner would only be answered the same.
            headers.replaceOrAdd(name: "Retry-After", value: String(seconds))
        }
        respond(
            status: Status(code: problem.status),
            headers: headers,
            body: problem.jsonBytes,
            validator: nil,
            upstreamFailure: cause.map(UpstreamFailureSummary.init) ?? UpstreamFailureSummary(problem: problem)
        )
    }

    /// Answers `304 Not Modified` when the request's `If-None-Match` names `validator`'s tag, or that of its
    /// `gzip` body if this client would get that one (RFC 9110 §13.1.2: weak comparison, `*`, lists); then
    /// returns true and the route is done. The `304` carries the `ETag` that matched, `Cache-Control`, `Vary`
    /// and CORS, as the `200` would.
    func respondNotModified(_ validator: Validator, contentType: String = "application/json") -> Bool {
        guard let header = request.headers["If-None-Match"] else { return false }
        let compressible = responses.compresses && Self.isCompressible(contentType: contentType)
        var candidates = [validator.tag]
        if compressible, let gzip = Gzip.shared, AcceptEncoding(request.headers["Accept-Encoding"]).prefersGzip {
            candidates.append(validator.tag.withCoding(gzip.coding))
        }
        guard let matched = IfNoneMatch.match(header, candidates: candidates) else { return false }
        var headers: Headers = [:]
        service.cors.apply(to: &headers, origin: request.headers["Origin"])
        responses.label(&headers, status: .notModified, compressible: compressible)
        headers.add(name: "Cache-Control", value: validator.cacheControl)
        write(status: .notModified, headers: headers, body: [], tag: matched)
        return true
    }

    /// `problem` with this request's path as its instance, unless it names one already.
    func instanced(_ problem: Problem) -> Problem {
        var problem = problem
        if problem.instance == nil { problem.instance = Routes.clip(request.path) }
        return problem
    }

    /// Answers a CORS preflight (or a plain `OPTIONS`) for an existing route: `204`, counted but not logged.
    func respondToPreflight(methods: [String] = ["GET", "HEAD", "OPTIONS"]) {
        let allowed = methods.joined(separator: ", ")
        var headers = service.cors.preflightHeaders(
            origin: request.headers["Origin"],
            requestedHeaders: request.headers["Access-Control-Request-Headers"],
            methods: allowed
        )
        headers.add(name: "Allow", value: allowed)
        emit(status: .noContent, headers: headers, body: [])
        routeMetrics.countRequest(status: 204)
    }

    /// Starts a `200` SSE or NDJSON response of `mediaType`, with `Cache-Control: no-cache` and
    /// `X-Accel-Buffering: no` (so that proxies pass each event on at once). A `HEAD` request gets the
    /// head alone and is recorded as a completed stream: then `nil` comes back, as there is nothing
    /// to produce. Otherwise the caller reports the end with ``streamEnded(_:)``.
    ///
    /// Streams are never `gzip`-coded: a compressor holds bytes back until it has enough to code, which
    /// would delay each event, and the client's read rate is the producer's demand only while every byte
    /// written is a byte the client can read.
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
        service.cors.apply(to: &headers, origin: request.headers["Origin"])
        responses.label(&headers, status: .ok, compressible: false)
        finishHead(&headers)
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

    // MARK: - The way out

    /// Bodies larger than this are `gzip`-coded on a worker, not on the loop (zlib codes decimal digits at
    /// roughly 20–60 MB/s, so 16 KiB is a few hundred microseconds at most).
    static let inlineCompressionLimit = 16 * 1024

    /// Where coding of large bodies runs; concurrent, bounded by Dispatch's worker pool.
    private static let compressionQueue = DispatchQueue(
        label: "spout.compression",
        qos: .utility,
        attributes: .concurrent
    )

    /// Sends a complete response whose head (content type, CORS, `Vary`, `Cache-Control`) is ready: adds the
    /// `ETag` of `tag` (the uncoded body's), and codes the body with `gzip` when it is
    /// `compressible`, at least `compression.minimumBytes` long (or the client refuses an uncoded body) and
    /// the client's `Accept-Encoding` prefers `gzip`. A coded body gets `Content-Encoding: gzip` and the
    /// coded tag (a different strong `ETag`, RFC 9110 §8.8.3).
    func send(
        status: Status,
        headers: consuming Headers,
        body: [UInt8],
        compressible: Bool,
        tag: EntityTag?,
        upstreamFailure: UpstreamFailureSummary? = nil
    ) {
        guard compressible, status.allowsBody, !body.isEmpty, let gzip = Gzip.shared,
            let acceptEncoding = request.headers["Accept-Encoding"]
        else {
            write(status: status, headers: headers, body: body, tag: tag, upstreamFailure: upstreamFailure)
            return
        }
        let accepted = AcceptEncoding(acceptEncoding)
        guard accepted.prefersGzip,
            body.count >= service.configuration.compression.minimumBytes || accepted.refusesIdentity
        else {
            write(status: status, headers: headers, body: body, tag: tag, upstreamFailure: upstreamFailure)
            return
        }
        guard body.count > Self.inlineCompressionLimit else {
            writeCoded(
                gzip.compress(body),
                gzip,
                status: status,
                headers: headers,
                body: body,
                tag: tag,
                upstreamFailure: upstreamFailure
            )
            return
        }
        let loop = loop
        let head = headers
        Self.compressionQueue.async {
            let coded = gzip.compress(body)
            loop.execute {
                writeCoded(
                    coded,
                    gzip,
                    status: status,
                    headers: head,
                    body: body,
                    tag: tag,
                    upstreamFailure: upstreamFailure
                )
            }
        }
    }

    /// Writes the coded body with its tag, or the uncoded one when zlib failed.
    private func writeCoded(
        _ coded: [UInt8]?,
        _ gzip: Gzip,
        status: Status,
        headers: consuming Headers,
        body: [UInt8],
        tag: EntityTag?,
        upstreamFailure: UpstreamFailureSummary?
    ) {
        guard let coded else {
            write(status: status, headers: headers, body: body, tag: tag, upstreamFailure: upstreamFailure)
            return
        }
        headers.add(name: "Content-Encoding", value: "gzip")
        write(
            status: status,
            headers: headers,
            body: coded,
            tag: tag?.withCoding(gzip.coding),
            upstreamFailure: upstreamFailure
        )
    }

    /// Writes a complete response and records it (log line, metrics).
    private func write(
        status: Status,
        headers: consuming Headers,
        body: [UInt8],
        tag: EntityTag?,
        upstreamFailure: UpstreamFailureSummary? = nil
    ) {
        emit(status: status, headers: headers, tag: tag, body: body)
        record(
            status: status.code,
            bytes: request.method == .head ? 0 : body.count,
            upstreamFailure: upstreamFailure
        )
    }

    /// Hands a complete response to the server: `headers`, then the `ETag` of `tag` and `X-Request-ID` (the
    /// fields ``finishHead(_:)`` adds), which the server writes after them; so headers built once for the route
    /// are written as they are, not copied to add the two.
    private func emit(status: Status, headers: Headers, tag: EntityTag? = nil, body: [UInt8]) {
        let requestID: (name: StaticString, value: String) = ("X-Request-ID", correlation.requestID)
        let extra =
            if let tag { ExtraFields(("ETag", tag.headerValue), requestID) } else { ExtraFields(requestID) }
        responder.respond(status: status, headers: headers, appending: extra, body: body)
    }

    /// The last step of every streamed response head (complete ones get the same field from ``emit(status:headers:tag:body:)``):
    /// the one place to add a header that all of Spout's responses carry: `X-Request-ID`. The route's own
    /// headers, CORS, `Vary`, `Cache-Control`, `Content-Encoding` and `ETag` are in `headers` already; the
    /// server adds `Date`, the framing and `Connection`. Keep it cheap: it runs for every request.
    @inline(__always)
    private func finishHead(_ headers: inout Headers) {
        headers.add(name: "X-Request-ID", value: correlation.requestID)
    }

    /// Whether a body of `contentType` is one Spout codes: JSON and problem documents.
    static func isCompressible(contentType: String?) -> Bool {
        guard let contentType else { return false }
        return contentType.hasPrefix("application/json") || contentType.hasPrefix(Problem.mediaType)
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
        // A `let` the closure borrows: calling into a captured `var` copied the entry (a retain and a release
        // for each of its strings).
        let line = entry
        sink.write(lineCapacity: 256) { line.appendJSON(to: &$0) }
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
    /// The prebuilt headers of each ``ResponsePolicy``, by raw value.
    private let responsesByPolicy: [RouteResponses]
    /// The metrics of each route, by ``Router/Route/index``.
    let routeMetrics: [RouteMetrics]
    /// The metrics of requests that matched no route.
    let unmatchedMetrics: RouteMetrics
    /// The outbound client for the article routes.
    let upstream: UpstreamClient
    /// The OpenAPI document served at `/openapi.json`, with this configuration's limits.
    let openAPI: OpenAPIDocument
    /// The query parameters the request log does not show the values of.
    let queryRedaction: QueryRedaction
    /// The channels' broker and access rules.
    let channels: ChannelService
    private let tickers: [ObjectIdentifier: HeartbeatTicker]

    init(
        configuration: SpoutConfiguration,
        metrics: SpoutMetrics,
        log: (any LogSink)?,
        readiness: Readiness,
        loops: [EventLoop],
        routes: [String] = [],
        hooks: ServiceHooks = ServiceHooks(),
        events: EventLog? = nil
    ) {
        self.hooks = hooks
        self.routeMetrics = routes.map { RouteMetrics(route: $0, metrics: metrics) }
        self.unmatchedMetrics = RouteMetrics(route: "unmatched", metrics: metrics)
        self.configuration = configuration
        self.metrics = metrics
        self.log = log
        let cors = CORSPolicy(
            allowedOrigins: configuration.cors.allowedOrigins,
            allowsCredentials: !configuration.channels.jwt.cookieName.isEmpty
        )
        self.cors = cors
        self.responsesByPolicy = ResponsePolicy.allCases.map {
            RouteResponses(policy: $0, configuration: configuration, cors: cors)
        }
        self.readiness = readiness
        self.openAPI = OpenAPIDocument(configuration: configuration)
        self.queryRedaction = QueryRedaction(configuration.log.redactQueryParameters)
        self.channels = ChannelService(
            configuration: configuration.channels,
            metrics: metrics.channels,
            loops: loops,
            registry: metrics.registry,
            maxBodyBytes: configuration.limits.maxBodyBytes,
            events: events,
            trustedProxies: configuration.trustedProxies
        )
        self.upstream = UpstreamClient(
            configuration: configuration.upstream,
            baseURL: configuration.upstream.baseURL.isEmpty ? nil : URL(string: configuration.upstream.baseURL),
            metrics: metrics
        )
        let heartbeat = Duration.milliseconds(Int64((configuration.sse.heartbeatSeconds * 1000).rounded()))
        var tickers: [ObjectIdentifier: HeartbeatTicker] = [:]
        for loop in loops {
            tickers[ObjectIdentifier(loop)] = HeartbeatTicker(loop: loop, heartbeat: heartbeat)
        }
        self.tickers = tickers
    }

    /// The prebuilt headers of `policy`.
    func responses(for policy: ResponsePolicy) -> RouteResponses {
        responsesByPolicy[policy.rawValue]
    }

    /// The heartbeat ticker of `loop`.
    func heartbeats(on loop: EventLoop) -> HeartbeatTicker? {
        tickers[ObjectIdentifier(loop)]
    }

    func stopTimers() {
        for ticker in tickers.values { ticker.cancel() }
        channels.stop()
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
