import Dispatch
import EventLoops
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
    /// What every route's answers go through (CORS, the log, stream metrics and heartbeats); a route's own
    /// dependencies come to its handler beside this context (``RouteDependencies``).
    let services: ResponseServices
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
    /// The verified JWT's `sub` once a channel route has identified the request (``identified(as:)``), for the
    /// request log.
    private(set) var subject: String? = nil

    /// This context, with `identity`'s `sub` for the request log: a route that has identified its request answers
    /// through the copy.
    func identified(as identity: ChannelIdentity) -> RequestContext {
        var copy = self
        copy.subject = identity.subject
        return copy
    }

    /// The headers every upstream call made for this request carries (`X-Request-ID`, `traceparent`,
    /// `tracestate`); see ``RequestCorrelation/correlationHeaders``.
    var correlationHeaders: [String: String] { correlation.correlationHeaders }

    /// The loop the request arrived on.
    var loop: EventLoop { responder.loop }

    /// The heartbeat ticker of the request's loop, for a stream's bridge.
    var heartbeats: HeartbeatTicker? { services.heartbeats(on: loop) }

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
        services.cors.apply(to: &headers, origin: request.headers["Origin"])
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
            services.cors.apply(to: &headers, origin: request.headers["Origin"])
            responses.label(&headers, status: status, compressible: responses.compresses)
            if let validator { headers.add(name: "Cache-Control", value: validator.cacheControl) }
        }
        send(status: status, headers: headers, body: body, compressible: responses.compresses, tag: validator?.tag)
    }
}
