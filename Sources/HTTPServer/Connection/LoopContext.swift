import Dispatch
import EventLoops
import OpenSSL

/// A server's share of one event loop: the registry of its connections there and their coarse timer.
///
/// One timer per loop (not per connection) scans the registry at ``tickInterval``; each connection
/// compares its own deadlines, so 10,000 connections cost one Dispatch timer and a linear scan a second.
/// The same tick lets the loop give back the pages of spare outbound storage no writer has used since
/// the previous tick (``EventLoop/releaseIdleSpare()``).
///
/// **Ownership:** Created and retained by the ``Server``; connections retain it.
///
/// **Thread safety:** Confined to ``loop``'s queue, except the immutable settings.
final class LoopContext: @unchecked Sendable {  // Mutable state is confined to `loop.queue`.
    let loop: EventLoop  // Immutable.
    let configuration: Server.Configuration  // Immutable.
    let handler: Server.Handler  // Immutable.
    /// The connections' deadlines, in nanoseconds. // Immutable.
    let timeouts: ConnectionStateMachine<BodyWriter>.Timeouts
    /// The bounds of a stream's adaptive watermark. // Immutable.
    let watermark: AdaptiveWatermark.Settings
    /// Called (on this loop) each time a connection's descriptor is closed, with whether it was a
    /// probe-reserve connection. It holds the server, which
    /// holds this context: a cycle that keeps a shutting-down server alive until its last connection is
    /// gone, and that ``detach()`` breaks once the server has stopped. // Loop-confined.
    private var closedCallback: (@Sendable (_ reserve: Bool) -> Void)?

    private var connections: [Connection] = []  // Loop-confined.
    private var timer: (any DispatchSourceTimer)?  // Loop-confined.
    /// Set when the server begins a graceful shutdown; new connections start quiescing. // Loop-confined.
    private(set) var isShuttingDown = false
    /// Set when the server begins draining (``Server/beginDraining()``); new connections start quiescing.
    /// // Loop-confined.
    private(set) var isDraining = false
    /// How many times a connection held back a pipelined request until its earlier answers were sent
    /// (``Connection/pipelineBacklogBytes``). For tests. // Loop-confined.
    var pipelineHolds = 0
    /// The cached `Date` header line of the responses written on this loop. // Loop-confined.
    #if SPOUT_CHECKED_EXCLUSIVITY
        var dateCache = DateCache()
    #else
        // Unchecked: bench/tools/request_cost.sh SCOPE=loop (/health, fib JSON): every response's head takes it
        // `inout`, and the loop's serial queue already rules out an overlapping access (see `Connection`).
        @exclusivity(unchecked) var dateCache = DateCache()
    #endif

    init(
        loop: EventLoop,
        configuration: Server.Configuration,
        handler: @escaping Server.Handler,
        connectionClosed: @escaping @Sendable (_ reserve: Bool) -> Void
    ) {
        self.loop = loop
        self.configuration = configuration
        self.handler = handler
        self.closedCallback = connectionClosed
        timeouts = .init(configuration)
        watermark = .init(configuration)
        handshakeTimeout = configuration.tlsHandshakeTimeout.clampedNanoseconds
    }

    /// The TLS handshake's deadline after accept (``Server/Configuration/tlsHandshakeTimeout``), in nanoseconds.
    /// // Immutable.
    let handshakeTimeout: UInt64

    /// How often the timer scans: a quarter of the shortest timeout (the TLS handshake's included, on a TLS
    /// server), between 10 ms and 1 s.
    var tickInterval: DispatchTimeInterval {
        let shortest = configuration.tls == nil ? timeouts.shortest : min(timeouts.shortest, handshakeTimeout)
        let quarter = min(max(shortest / 4, 10_000_000), 1_000_000_000)
        return .nanoseconds(Int(quarter))
    }

    /// The number of open connections on this loop.
    var count: Int {
        loop.preconditionInEventLoop()
        return connections.count
    }

    /// Whether the coarse timer is running.
    var isTicking: Bool {
        loop.preconditionInEventLoop()
        return timer != nil
    }

    /// Starts the coarse timer unless it runs. It stops itself once the loop has no connection and nothing
    /// left to release: an idle loop must not wake Dispatch, whose idle worker threads only exit after 5 s
    /// without a wake-up (a 2 Hz tick per loop kept every one of them alive after load).
    func startTimer() {
        loop.preconditionInEventLoop()
        guard timer == nil else { return }
        let source = DispatchSource.makeTimerSource(queue: loop.queue)
        let interval = tickInterval
        source.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(5))
        source.setEventHandler { [self] in tick() }
        timer = source
        source.activate()
    }

    func stopTimer() {
        loop.preconditionInEventLoop()
        timer?.cancel()
        timer = nil
    }

    /// Creates, registers and starts a connection for an accepted descriptor; `reserve`: accepted into the
    /// probe reserve.
    func open(_ fd: Int32, reserve: Bool = false) {
        loop.preconditionInEventLoop()
        var tls: TLSLayer?
        if let reloadable = configuration.tls {
            do {
                let engine = try reloadable.current.makeServerEngine()
                let deadline = SystemEnvironment.monotonicNanoseconds() &+ handshakeTimeout
                tls = TLSLayer(engine: engine, handshakeDeadline: deadline)
            } catch {
                // Out of memory inside OpenSSL: this connection cannot be served.
                Socket.close(fd)
                closedCallback?(reserve)
                return
            }
        }
        let connection = Connection(fd: fd, context: self, isReserve: reserve, tls: tls)
        connection.registryIndex = connections.count
        connections.append(connection)
        startTimer()
        connection.start()
    }

    func remove(_ connection: Connection) {
        let index = connection.registryIndex
        guard index >= 0, index < connections.count, connections[index] === connection else { return }
        let last = connections.removeLast()
        if index < connections.count {
            connections[index] = last
            last.registryIndex = index
        }
        connection.registryIndex = -1
    }

    func connectionClosed(reserve: Bool) {
        closedCallback?(reserve)
    }

    /// Drops the callback into the server, once it has stopped (no connection left, none to come), so that
    /// nothing here keeps the server, and through its handler the application, alive.
    func detach() {
        loop.preconditionInEventLoop()
        closedCallback = nil
    }

    private func tick() {
        let spareSettled = loop.releaseIdleSpare()
        if connections.isEmpty && spareSettled {
            stopTimer()
            return
        }
        let now = SystemEnvironment.monotonicNanoseconds()
        // Backwards, so a connection that closes (swap-remove) only moves an already-checked one.
        var index = connections.count
        while index > 0 {
            index -= 1
            if index < connections.count { connections[index].checkDeadlines(now: now) }
        }
    }

    /// The server began draining: every connection quiesces (see ``Connection/drainRequested()``).
    func drain() {
        loop.preconditionInEventLoop()
        isDraining = true
        // Backwards: a connection that closes at once (swap-remove) only moves an already-handled one.
        var index = connections.count
        while index > 0 {
            index -= 1
            if index < connections.count { connections[index].drainRequested() }
        }
    }

    func shutdown() {
        loop.preconditionInEventLoop()
        isShuttingDown = true
        for connection in connections { connection.shutdownRequested() }
    }

    func forceCloseAll() {
        loop.preconditionInEventLoop()
        for connection in connections { connection.forceClose() }
    }
}
