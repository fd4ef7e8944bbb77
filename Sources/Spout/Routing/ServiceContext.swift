import EventLoops
import Foundation
import HTTPServer
import OpenSSL

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
    /// Where costly sequence work runs (``SequenceWorker/queue`` unless test hooks watch it).
    let sequenceWorker: SequenceWorker
    /// The small JSON sequence documents kept for reuse.
    let smallDocuments: SmallDocuments
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
        events: EventLog? = nil,
        redisTLS: TLSContext? = nil
    ) {
        self.hooks = hooks
        self.sequenceWorker = hooks.sequenceWorker
        self.smallDocuments = hooks.smallDocuments
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
            trustedProxies: configuration.trustedProxies,
            redisTLS: redisTLS
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
