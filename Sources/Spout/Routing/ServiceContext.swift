import EventLoops
import Foundation
import HTTPServer
import OpenSSL
import Sequences

/// What the service builds once for its routes, and holds to stop them: each route group's
/// ``RouteDependencies``, what every ``RequestContext`` answers with (``ResponseServices``), the per-route
/// metrics and prebuilt headers. Routes never see this object: the dispatch hands a route its group's
/// dependencies and a request context, nothing else.
///
/// **Ownership:** created once by ``SpoutService``.
///
/// **Thread safety:** immutable references to thread-safe objects.
final class ServiceContext: Sendable {
    let configuration: SpoutConfiguration
    /// What each route group uses.
    let routes: RouteDependencies
    /// What every request context answers with.
    let responding: ResponseServices
    /// The prebuilt headers of each ``ResponsePolicy``, by raw value.
    private let responsesByPolicy: [RouteResponses]
    /// The metrics of each route, by ``Router/Route/index``.
    let routeMetrics: [RouteMetrics]
    /// The metrics of requests that matched no route.
    let unmatchedMetrics: RouteMetrics
    private let metrics: SpoutMetrics
    /// The outbound client for the article routes (its base URL is set once the port is known).
    var upstream: UpstreamClient { routes.upstream.client }
    /// The channels' broker and access rules.
    var channels: ChannelService { routes.channels.broker }

    /// - Parameter hooks: Test hooks: only the sequence routes' dependencies see what they decide (where costly work
    ///   runs, whether JSON documents are kept, the probes).
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
        self.routeMetrics = routes.map { RouteMetrics(route: $0, metrics: metrics) }
        self.unmatchedMetrics = RouteMetrics(route: "unmatched", metrics: metrics)
        self.configuration = configuration
        self.metrics = metrics
        let cors = CORSPolicy(
            allowedOrigins: configuration.cors.allowedOrigins,
            allowsCredentials: !configuration.channels.jwt.cookieName.isEmpty
        )
        self.responsesByPolicy = ResponsePolicy.allCases.map {
            RouteResponses(policy: $0, configuration: configuration, cors: cors)
        }
        let channels = ChannelService(
            configuration: configuration.channels,
            metrics: metrics.channels,
            loops: loops,
            registry: metrics.registry,
            maxBodyBytes: configuration.limits.maxBodyBytes,
            events: events,
            trustedProxies: configuration.trustedProxies,
            redisTLS: redisTLS
        )
        self.responding = ResponseServices(
            configuration: configuration,
            metrics: metrics,
            log: log,
            cors: cors,
            loops: loops,
            proxies: channels.access.proxies
        )
        let upstream = UpstreamClient(
            configuration: configuration.upstream,
            baseURL: configuration.upstream.baseURL.isEmpty ? nil : URL(string: configuration.upstream.baseURL),
            metrics: metrics
        )
        self.routes = RouteDependencies(
            health: HealthRoutes.Dependencies(
                readiness: readiness,
                redis: channels.redis,
                redisReadiness: configuration.channels.redisReadiness,
                registry: metrics.registry
            ),
            documents: DocumentRoutes.Dependencies(openAPI: OpenAPIDocument(configuration: configuration)),
            sequences: SequenceRoutes.Dependencies(
                settings: configuration.sequences,
                retryMilliseconds: configuration.sse.retryMilliseconds,
                worker: hooks.sequenceWorker,
                smallDocuments: hooks.smallDocuments,
                makeProbe: hooks.makeSequenceProbe
            ),
            upstream: UpstreamRoutes.Dependencies(
                client: upstream,
                pageSize: configuration.upstream.pageSize,
                retryMilliseconds: configuration.sse.retryMilliseconds,
                servesDemo: configuration.upstream.baseURL.isEmpty
            ),
            channels: ChannelRoutes.Dependencies(
                broker: channels,
                settings: configuration.channels,
                retryMilliseconds: configuration.sse.retryMilliseconds,
                heartbeatSeconds: configuration.sse.heartbeatSeconds
            )
        )
    }

    /// The prebuilt headers of `policy`.
    func responses(for policy: ResponsePolicy) -> RouteResponses {
        responsesByPolicy[policy.rawValue]
    }

    func stopTimers() {
        responding.stopTimers()
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

/// What each group of routes uses, handed to a route's handler by ``Routes/dispatch(_:responder:router:context:)``
/// with its request: a route reaches its group's dependencies and nothing else of the service.
///
/// **Thread safety:** immutable; every member is `Sendable`.
struct RouteDependencies: Sendable {
    /// `/ready` and `/metrics`.
    let health: HealthRoutes.Dependencies
    /// `/openapi.json`.
    let documents: DocumentRoutes.Dependencies
    /// `/sequences/…`.
    let sequences: SequenceRoutes.Dependencies
    /// The routes on the upstream (`/articles…`, `/users/{id}/profile`, `/dashboard/…`, `/workflow/…`) and the demo
    /// data that stands in for it.
    let upstream: UpstreamRoutes.Dependencies
    /// `/channels…` and `/subscribe`.
    let channels: ChannelRoutes.Dependencies
}

/// What every ``RequestContext`` answers with, whatever its route: CORS, the request log, the stream metrics and
/// heartbeats, the compression threshold.
///
/// **Ownership:** created once by ``ServiceContext``; every request context holds it.
///
/// **Thread safety:** immutable references to thread-safe objects; the heartbeat tickers are loop-confined and
/// looked up by loop.
final class ResponseServices: Sendable {
    let cors: CORSPolicy
    /// Where request log lines go; nil when they are off.
    let log: (any LogSink)?
    /// Whether the demo upstream's calls to the service itself are logged (`log.selfCalls`).
    let logsSelfCalls: Bool
    /// The query parameters the request log does not show the values of.
    let queryRedaction: QueryRedaction
    /// The smallest body worth `gzip` (`compression.minimumBytes`).
    let compressionMinimumBytes: Int
    /// The stream gauges and counters.
    let metrics: SpoutMetrics
    /// The proxies whose forwarding fields name the client (the channels' `trustedProxies`, parsed once): the log
    /// shows client and proxy.
    let proxies: TrustedProxies
    private let tickers: [ObjectIdentifier: HeartbeatTicker]

    init(
        configuration: SpoutConfiguration,
        metrics: SpoutMetrics,
        log: (any LogSink)?,
        cors: CORSPolicy,
        loops: [EventLoop],
        proxies: TrustedProxies
    ) {
        self.cors = cors
        self.log = log
        self.logsSelfCalls = configuration.log.selfCalls
        self.queryRedaction = QueryRedaction(configuration.log.redactQueryParameters)
        self.compressionMinimumBytes = configuration.compression.minimumBytes
        self.metrics = metrics
        self.proxies = proxies
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
