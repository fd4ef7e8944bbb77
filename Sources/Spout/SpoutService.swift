import Dispatch
import EventLoops
import Foundation
import HTTPServer
import OpenSSL
import RESP
import Reactive
import Sequences
import Synchronization

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
    /// The bound port (useful with port 0): HTTPS when TLS is configured without `tls.port`, else plain HTTP.
    public let port: Int
    /// The HTTPS port beside plain HTTP (`tls.port`), nil when there is none.
    public let tlsPort: Int?
    /// The certificate and key served, reloaded by ``reloadTLS()``; nil without TLS.
    let tls: TLSReloadableContext?
    /// The metrics served at `/metrics`.
    let metrics: SpoutMetrics
    /// Readiness as served at `/ready`.
    public let readiness: Readiness
    /// The number of event loops serving connections.
    public let eventLoopCount: Int
    /// `maxConnections` as the server enforces it: clamped to the open-file limit minus a reserve.
    public var connectionLimit: Server.ConnectionLimit { server.connectionLimit }
    /// The server; ``eventLoopGroup`` (`+Testing`) reaches its loops.
    let server: Server
    /// What the routes share; ``channels`` (`+Testing`) reaches the broker.
    let context: ServiceContext
    /// The HTTPS server on `tls.port`, beside ``server``; nil without one.
    private let tlsServer: Server?
    /// The plain HTTP listener on loopback that serves the demo upstream to the service itself when ``server`` is
    /// HTTPS and no upstream is configured; nil otherwise.
    let demoServer: Server?
    /// Reloads ``tls`` when its files change; nil without TLS.
    private let tlsWatcher: TLSFileWatcher?
    private let events: EventLog?
    private let drainDelay = DrainDelay()

    private init(
        port: Int,
        metrics: SpoutMetrics,
        readiness: Readiness,
        server: Server,
        tlsServer: Server?,
        demoServer: Server?,
        tls: TLSReloadableContext?,
        tlsWatcher: TLSFileWatcher?,
        context: ServiceContext,
        events: EventLog?
    ) {
        self.port = port
        self.tlsServer = tlsServer
        self.demoServer = demoServer
        self.tlsWatcher = tlsWatcher
        self.tlsPort = tlsServer?.port
        self.tls = tls
        self.metrics = metrics
        self.readiness = readiness
        self.server = server
        self.context = context
        self.events = events
        self.eventLoopCount = server.group.loops.count
    }

    /// Binds, starts serving, and turns ready.
    ///
    /// - Parameters:
    ///   - configuration: The service's configuration.
    ///   - log: Where request log lines go; `nil` for none. They are `info` lines: a `log.level` above it
    ///     silences them, as does `log.requests: false`.
    ///   - events: Where the service's own messages go (listening, draining, stopped); `nil` for none.
    /// - Throws: `IOError` when the address cannot be bound; ``TLSError`` when TLS is configured (HTTPS, or a
    ///   `rediss://` Redis) and OpenSSL 3 is missing or a certificate, key or CA file is bad.
    public static func start(
        configuration: SpoutConfiguration,
        log: (any LogSink)? = nil,
        events: EventLog? = nil
    ) throws -> SpoutService {
        try start(configuration: configuration, log: log, events: events, hooks: ServiceHooks())
    }

    /// Starts with test hooks (see ``ServiceHooks``).
    package static func start(
        configuration: SpoutConfiguration,
        log: (any LogSink)?,
        events: EventLog? = nil,
        hooks: ServiceHooks
    ) throws -> SpoutService {
        let available = min(EventLoopGroup.defaultLoopCount, ProcessInfo.processInfo.activeProcessorCount)
        let loopCount =
            configuration.eventLoops > 0 ? configuration.eventLoops : CPUQuota.loopCount(available: available)
        // TLS first: a bad file or a missing libssl refuses the start before anything listens. The files' identities
        // are read before the files, so that a change meanwhile is seen by the watcher.
        let tlsFiles =
            [configuration.tls.certificateFile, configuration.tls.privateKeyFile]
            + (configuration.tls.ocspResponseFile.isEmpty ? [] : [configuration.tls.ocspResponseFile])
        let tlsFilesLoaded = configuration.tls.isEnabled ? tlsFiles.map(TLSFileWatcher.identity(of:)) : []
        let tls =
            try configuration.tls.isEnabled
            ? TLSReloadableContext(TLSServerConfiguration(spout: configuration.tls)) : nil
        let redisTLS = try TLSClientConfiguration.redisContext(configuration.channels)
        let group = EventLoopGroup(loopCount: loopCount)
        let metrics = SpoutMetrics()
        let tlsMetrics = tls.map { TLSMetrics(registry: metrics.registry, context: $0) }
        let readiness = Readiness()
        let router = Routes.makeRouter(configuration: configuration)
        let logsRequests = configuration.log.requests && configuration.log.level <= .info
        let context = ServiceContext(
            configuration: configuration,
            metrics: metrics,
            log: logsRequests ? log : nil,
            readiness: readiness,
            loops: group.loops,
            routes: router.patterns,
            hooks: hooks,
            events: events,
            redisTLS: redisTLS
        )
        var serverConfiguration = Server.Configuration(spout: configuration)
        // A request may have a body only on a route that takes one, up to that route's `maxBodyBytes` (GET,
        // HEAD, OPTIONS and DELETE take none); any other body is refused with 413 before it is read.
        // A POST, PUT or PATCH to a path that exists under other methods takes a small body too, so that its 405
        // (with Allow) is what the client hears rather than a 413 for a body nothing would read.
        let allowanceFor405 = min(64 * 1024, configuration.limits.maxBodyBytes)
        serverConfiguration.requestBodyLimit = { head in
            switch router.match(method: head.method.rawValue, path: Substring(head.path)) {
            case .found(let route, _): route.maxBodyBytes
            case .methodNotAllowed: ["POST", "PUT", "PATCH"].contains(head.method.rawValue) ? allowanceFor405 : 0
            case .notFound: 0
            }
        }
        // The errors the server answers before any route (a body over its limit, a malformed request…) are
        // problems too where the catalogue has a kind for them.
        serverConfiguration.errorResponseBody = { status, reason in
            guard let problem = Problem.serverError(status: status.code, reason: reason) else { return nil }
            return (Problem.mediaType, problem.jsonBytes)
        }
        if let tls, let tlsMetrics {
            serverConfiguration.tls = tls
            serverConfiguration.tlsEvents = { tlsMetrics.record($0) }
        }
        let handler: Server.Handler = { request, responder in
            Routes.dispatch(request, responder: responder, router: router, context: context)
        }
        // With `tls.port`, plain HTTP on `port` and HTTPS beside it on the same loops; without, `port` is HTTPS.
        var plainConfiguration = serverConfiguration
        if configuration.tls.port != 0 { plainConfiguration.tls = nil }
        let server = try Server.start(configuration: plainConfiguration, group: group, handler: handler)
        var tlsServer: Server?
        if configuration.tls.port != 0 {
            serverConfiguration.port = configuration.tls.port
            do {
                tlsServer = try Server.start(configuration: serverConfiguration, group: group, handler: handler)
            } catch {
                server.shutdown(deadline: .zero)
                throw error
            }
        }
        // The demo upstream is the service's own `/demo` routes, fetched over plain HTTP on loopback. When `port`
        // is HTTPS it answers plain HTTP with a 400, so a plain listener of its own on loopback (port chosen by the
        // kernel, never announced) serves the demo routes only, to the service itself.
        var demoServer: Server?
        if context.upstream.baseURL == nil, tls != nil, tlsServer == nil {
            var demoConfiguration = plainConfiguration
            demoConfiguration.tls = nil
            demoConfiguration.tlsEvents = nil
            demoConfiguration.host = loopbackHost(for: configuration.host)
            demoConfiguration.port = 0
            demoConfiguration.requestBodyLimit = { _ in 0 }
            let demoRouter = Routes.makeDemoRouter()
            do {
                demoServer = try Server.start(configuration: demoConfiguration, group: group) { request, responder in
                    Routes.dispatch(request, responder: responder, router: demoRouter, context: context)
                }
            } catch {
                server.shutdown(deadline: .zero)
                throw error
            }
        }
        let service = SpoutService(
            port: server.port,
            metrics: metrics,
            readiness: readiness,
            server: server,
            tlsServer: tlsServer,
            demoServer: demoServer,
            tls: tls,
            tlsWatcher: tls.map { tls in
                // Reloads when the files change (cert-manager renewing the mounted secret), as `SIGHUP` does.
                TLSFileWatcher(files: tlsFiles, loaded: tlsFilesLoaded, interval: hooks.tlsFileCheckInterval) {
                    _ = SpoutService.reloadTLS(tls, events: events, cause: "file_change")
                }
            },
            context: context,
            events: events
        )
        if context.upstream.baseURL == nil {
            context.upstream.setBaseURL(
                demoUpstreamURL(host: configuration.host, port: demoServer?.port ?? server.port)
            )
        }
        readiness.set(.ready)
        events?.log(
            .info,
            "listening",
            "listening on \(tls != nil && tlsServer == nil ? "https" : "http")://\(hostForURL(configuration.host)):\(server.port)"
                + (tlsServer.map { " and https://\(hostForURL(configuration.host)):\($0.port)" } ?? ""),
            [
                "host": .string(configuration.host), "port": .integer(server.port), "event_loops": .integer(loopCount),
                "version": .string(BuildInfo.version), "revision": .string(BuildInfo.revision),
                "upstream": .string(configuration.upstream.baseURL.isEmpty ? "demo" : configuration.upstream.baseURL),
                "max_connections": .integer(server.connectionLimit.effective),
            ]
        )
        if server.connectionLimit.isClamped {
            events?.log(
                .info,
                "connection_limit_clamped",
                "\(server.connectionLimit)",
                [
                    "configured": .integer(server.connectionLimit.configured),
                    "effective": .integer(server.connectionLimit.effective),
                    "open_file_limit": .integer(server.connectionLimit.openFileLimit),
                ]
            )
        }
        return service
    }

    /// Drains and stops: `/ready` answers `503` (`draining`) at once; for `delay` the service goes on
    /// accepting and answering as usual, so a load balancer can take it out of rotation before its connections
    /// are refused; then the listener closes, streams get a final `event: end` with reason `shutdown`, and
    /// everything still open after `shutdown.graceSeconds` is closed. Returns when the server has stopped.
    ///
    /// A second call while the delay runs ends the delay (and waits for the same stop); ``endDelay()`` does too.
    ///
    /// - Parameter delay: How long to keep serving before closing the listener: `shutdown.delaySeconds` on
    ///   `SIGTERM`, none on `SIGINT` or in tests.
    public func shutdown(delay: Duration = .zero) async {
        let first = readiness.current != .draining
        readiness.set(.draining)
        // Every response from now on says Connection: close, and idle keep-alive connections are closed
        // gracefully, so no client has a request in flight on a connection when the listener closes.
        server.beginDraining()
        tlsServer?.beginDraining()
        if first {
            let seconds = Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18
            events?.log(
                .info,
                "draining",
                "draining: /ready answers 503; closing the listener in \(seconds) s",
                [
                    "delay_s": .number(seconds), "grace_s": .number(context.configuration.shutdown.graceSeconds),
                ]
            )
            await drainDelay.wait(delay)
        } else {
            drainDelay.end()
        }
        events?.log(
            .info,
            "closing",
            "closing the listener; open streams get a final frame",
            [
                "active_streams": .integer(metrics.activeStreams.value)
            ]
        )
        let grace = Duration.milliseconds(Int64((context.configuration.shutdown.graceSeconds * 1000).rounded()))
        async let tlsStopped: Void? = tlsServer?.shutdown(deadline: grace)
        await server.shutdown(deadline: grace)
        _ = await tlsStopped
        // Over Redis, the streams have ended: this replica leaves the shared presence before it goes (the other
        // replicas send `leave` for its subscribers now, not when its heartbeat lapses).
        await context.channels.depart()
        // Last: the requests the servers finished may have fetched the demo upstream until now.
        await demoServer?.shutdown(deadline: .zero)
        tlsWatcher?.cancel()
        context.stopTimers()
        context.upstream.shutdown()
        events?.log(.info, "stopped", "stopped")
    }

    /// Reads the TLS certificate and key files again (on `SIGHUP`, after a renewal): connections that start from
    /// now on use the new ones, open ones keep theirs. A bad file keeps the old certificate; the error says why.
    /// Reads files: call it off the event loops. Nil without TLS.
    @discardableResult
    public func reloadTLS() -> Result<Void, TLSError>? {
        guard let tls else { return nil }
        return Self.reloadTLS(tls, events: events, cause: "signal")
    }

    /// Reloads `tls` and logs the outcome (`cause`: `signal` or `file_change`).
    fileprivate static func reloadTLS(
        _ tls: TLSReloadableContext,
        events: EventLog?,
        cause: String
    ) -> Result<Void, TLSError> {
        switch tls.reload() {
        case .success(let fresh):
            events?.log(
                .info,
                "tls_reloaded",
                "tls certificate reloaded from \(tls.configuration.certificateFile)",
                ["expires_at": .integer(Int(fresh.certificateExpiry ?? 0)), "cause": .string(cause)]
            )
            return .success(())
        case .failure(let error):
            events?.log(
                .error,
                "tls_reload_failed",
                "kept the previous tls certificate: \(error)",
                ["cause": .string(cause)]
            )
            return .failure(error)
        }
    }

    /// Ends the delay of a ``shutdown(delay:)`` under way now (a second signal); nothing else.
    public func endDelay() {
        drainDelay.end()
    }
}

/// The wait between the start of draining and the closing of the listener, which ``end()`` cuts short.
/// Once ended (by its time or by ``end()``) it stays ended: a later wait returns at once.
///
/// **Thread safety:** safe to call from any thread (a `Mutex`).
final class DrainDelay: Sendable {
    private let state = LockedState<(ended: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    /// Returns after `delay`, or as soon as ``end()`` is called.
    func wait(_ delay: Duration) async {
        guard delay > .zero else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let endedAlready = state.withLock { state -> Bool in
                if state.ended { return true }
                state.waiters.append(continuation)
                return false
            }
            if endedAlready {
                continuation.resume()
                return
            }
            let nanoseconds = Int(
                clamping: delay.components.seconds.multipliedReportingOverflow(by: 1_000_000_000).partialValue
                    + delay.components.attoseconds / 1_000_000_000
            )
            DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { [self] in end() }
        }
    }

    /// Ends the wait now.
    func end() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.ended = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}

extension SpoutService {
    /// The paths served on the connections kept for probes beyond `maxConnections` (`probeConnections`).
    static let probePaths: Set<String> = ["/health", "/ready", "/metrics"]
}

/// `host` as it appears in a URL: IPv6 literals in brackets.
func hostForURL(_ host: String) -> String {
    host.contains(":") ? "[\(host)]" : host
}

/// The loopback address of the family of `host`: where the service reaches itself.
func loopbackHost(for host: String) -> String {
    host.contains(":") ? "::1" : "127.0.0.1"
}

/// Where the service reaches its own demo data over loopback when no upstream is configured.
func demoUpstreamURL(host: String, port: Int) -> URL {
    let loopback = hostForURL(loopbackHost(for: host))
    // Both parts are ours: an IP literal and a bound port, so the URL always parses.
    return URL(string: "http://\(loopback):\(port)/demo")!
}

extension Server.Configuration {
    /// The HTTP server's settings taken from Spout's configuration.
    init(spout configuration: SpoutConfiguration) {
        self.init(host: configuration.host, port: configuration.port)
        backlog = configuration.backlog
        maxConnections = configuration.maxConnections
        probeConnectionReserve = configuration.probeConnections
        // The probe reserve serves the routes an orchestrator or scraper asks a full server, nothing else.
        reserveConnectionAllows = { head in
            (head.method == .get || head.method == .head) && SpoutService.probePaths.contains(head.path)
        }
        streamSendBufferBytes =
            configuration.limits.streamSendBufferBytes > 0 ? configuration.limits.streamSendBufferBytes : nil
        streamDeadPeerSeconds =
            configuration.channels.deadPeerSeconds > 0 ? configuration.channels.deadPeerSeconds : nil
        parser.maxHeaderBytes = configuration.limits.maxHeaderBytes
        parser.maxHeaderCount = configuration.limits.maxHeaderCount
        parser.maxBodyBytes = configuration.limits.maxBodyBytes
        headReadTimeout = .seconds(configuration.limits.headReadTimeoutSeconds)
        bodyReadTimeout = .seconds(configuration.limits.bodyReadTimeoutSeconds)
        idleTimeout = .seconds(configuration.limits.idleTimeoutSeconds)
        writeStallTimeout = .seconds(configuration.limits.writeStallTimeoutSeconds)
        // Registered methods the routes refuse with 405 and Allow, rather than 501 as for a method never heard of.
        supportedMethods.formUnion([.trace, Method("QUERY")])
    }
}

extension TLSServerConfiguration {
    /// The files of `tls.certificateFile` and `tls.privateKeyFile` (and `tls.ocspResponseFile` when set), offering
    /// ALPN `http/1.1`.
    init(spout tls: SpoutConfiguration.TLS) {
        self.init(
            certificateFile: tls.certificateFile,
            privateKeyFile: tls.privateKeyFile,
            ocspResponseFile: tls.ocspResponseFile.isEmpty ? nil : tls.ocspResponseFile
        )
    }
}

extension TLSClientConfiguration {
    /// The trust and client certificate of a `rediss://` `channels.redisURL`: `channels.redisTLSCAFile` or the
    /// system's CA store, and `channels.redisTLSCertificateFile` with its key when set.
    init(redis channels: SpoutConfiguration.Channels) {
        self.init(
            trust: channels.redisTLSCAFile.isEmpty ? .system : .caFile(channels.redisTLSCAFile),
            certificateFile: channels.redisTLSCertificateFile.isEmpty ? nil : channels.redisTLSCertificateFile,
            privateKeyFile: channels.redisTLSPrivateKeyFile.isEmpty ? nil : channels.redisTLSPrivateKeyFile
        )
    }

    /// The client context for `channels.redisURL` when it is `rediss://`, nil otherwise. Reads the CA store or file
    /// and the client certificate: at start-up.
    ///
    /// - Throws: ``TLSError`` when OpenSSL 3 is missing, or a file is bad (naming it).
    static func redisContext(_ channels: SpoutConfiguration.Channels) throws(TLSError) -> TLSContext? {
        guard !channels.redisURL.isEmpty, (try? RedisURL(parsing: channels.redisURL))?.usesTLS == true else {
            return nil
        }
        return try TLSContext(client: TLSClientConfiguration(redis: channels))
    }
}
