import Dispatch
import Foundation
import HTTPServer
import Sequences
import Synchronization

/// Whether the service should receive traffic: false while starting and once draining.
///
/// **Thread safety:** safe to call from any thread (an atomic).
public final class Readiness: Sendable {
    /// The phases of the service's life, as `/ready` reports them.
    public enum Phase: Int, Sendable {
        case starting
        case ready
        case draining
    }

    private let phase = Atomic<Int>(Phase.starting.rawValue)

    public init() {}

    /// The current phase.
    public var current: Phase { Phase(rawValue: phase.load(ordering: .acquiring)) ?? .starting }

    func set(_ newPhase: Phase) {
        phase.store(newPhase.rawValue, ordering: .releasing)
    }
}

/// The Spout service: the HTTP server with Spout's routes, metrics, log and lifecycle.
///
///     let service = try SpoutService.start(configuration: SpoutConfiguration())
///     print("listening on", service.port)
///     await service.shutdown()
///
/// **Ownership:** the executable (or a test) keeps it until ``shutdown()`` returns.
///
/// **Thread safety:** safe to call from any thread.
public final class SpoutService: Sendable {
    /// The bound port (useful with port 0).
    public let port: Int
    /// The metrics served at `/metrics`.
    public let metrics: SpoutMetrics
    /// Readiness as served at `/ready`.
    public let readiness: Readiness
    private let server: Server
    private let context: ServiceContext

    private init(port: Int, metrics: SpoutMetrics, readiness: Readiness, server: Server, context: ServiceContext) {
        self.port = port
        self.metrics = metrics
        self.readiness = readiness
        self.server = server
        self.context = context
    }

    /// Binds, starts serving, and turns ready.
    ///
    /// - Parameters:
    ///   - configuration: The service's configuration.
    ///   - log: Where request log lines go; `nil` for none.
    /// - Throws: `IOError` when the address cannot be bound.
    public static func start(configuration: SpoutConfiguration, log: (any LogSink)? = nil) throws -> SpoutService {
        try start(configuration: configuration, log: log, hooks: ServiceHooks())
    }

    /// Starts with test hooks (see ``ServiceHooks``).
    package static func start(
        configuration: SpoutConfiguration,
        log: (any LogSink)?,
        hooks: ServiceHooks
    ) throws -> SpoutService {
        let loopCount = configuration.eventLoops > 0 ? configuration.eventLoops : EventLoopGroup.defaultLoopCount
        let group = EventLoopGroup(loopCount: loopCount)
        let metrics = SpoutMetrics()
        let readiness = Readiness()
        let router = Routes.makeRouter()
        let context = ServiceContext(
            configuration: configuration,
            metrics: metrics,
            log: configuration.log.requests ? log : nil,
            readiness: readiness,
            loops: group.loops,
            routes: router.patterns,
            hooks: hooks
        )
        let server = try Server.start(configuration: Server.Configuration(spout: configuration), group: group) {
            request, responder in
            Routes.dispatch(request, responder: responder, router: router, context: context)
        }
        let service = SpoutService(
            port: server.port,
            metrics: metrics,
            readiness: readiness,
            server: server,
            context: context
        )
        if context.upstream.baseURL == nil {
            context.upstream.setBaseURL(demoUpstreamURL(host: configuration.host, port: server.port))
        }
        readiness.set(.ready)
        return service
    }

    /// Drains: readiness goes false, streams get a final `event: end` with reason `shutdown`, and
    /// everything still open after the grace period is closed. Returns when the server has stopped.
    public func shutdown() async {
        readiness.set(.draining)
        let grace = Duration.milliseconds(Int64((context.configuration.shutdown.graceSeconds * 1000).rounded()))
        await server.shutdown(deadline: grace)
        context.stopTimers()
    }
}

/// Where the service reaches its own demo data over loopback when no upstream is configured.
func demoUpstreamURL(host: String, port: Int) -> URL {
    let loopback = host.contains(":") ? "[::1]" : "127.0.0.1"
    // Both parts are ours: an IP literal and a bound port, so the URL always parses.
    return URL(string: "http://\(loopback):\(port)/demo")!
}

/// Places where tests observe the service from inside.
///
/// **Thread safety:** immutable; the closures are called from event loops.
package struct ServiceHooks: Sendable {
    /// Called for each sequence stream; the probe it returns watches that stream's producer.
    package var makeSequenceProbe: (@Sendable (SequenceKind) -> SequenceProbe?)?
    /// Called on the worker thread that is about to reach a costly `start` (kind, start), before the work.
    package var willReachStart: (@Sendable (SequenceKind, Int) -> Void)?

    package init(
        makeSequenceProbe: (@Sendable (SequenceKind) -> SequenceProbe?)? = nil,
        willReachStart: (@Sendable (SequenceKind, Int) -> Void)? = nil
    ) {
        self.makeSequenceProbe = makeSequenceProbe
        self.willReachStart = willReachStart
    }
}

extension Server.Configuration {
    /// The HTTP server's settings taken from Spout's configuration.
    init(spout configuration: SpoutConfiguration) {
        self.init(host: configuration.host, port: configuration.port)
        backlog = configuration.backlog
        maxConnections = configuration.maxConnections
        parser.maxHeaderBytes = configuration.limits.maxHeaderBytes
        parser.maxHeaderCount = configuration.limits.maxHeaderCount
        parser.maxBodyBytes = configuration.limits.maxBodyBytes
        headReadTimeout = .seconds(configuration.limits.headReadTimeoutSeconds)
        idleTimeout = .seconds(configuration.limits.idleTimeoutSeconds)
        writeStallTimeout = .seconds(configuration.limits.writeStallTimeoutSeconds)
        // Registered methods the routes refuse with 405 and Allow, rather than 501 as for a method never heard of.
        supportedMethods.formUnion([.trace, Method("QUERY")])
    }
}
