import Dispatch
import EventLoops

/// An HTTP/1.1 server: a listening socket and connections spread over a fixed set of event loops.
///
/// ```swift
/// let server = try Server.start(configuration: .init(host: "127.0.0.1", port: 8080)) { request, responder in
///     responder.respond(headers: ["Content-Type": "text/plain"], body: "hello\n")
/// }
/// ```
///
/// The handler is called on the connection's loop with each complete request and a ``Responder``.
///
/// **Ownership:** The caller retains it; its accept source keeps it alive until ``shutdown(deadline:completion:)``
/// begins, its connections until the shutdown has completed. Once stopped, nothing of its own retains it: a
/// stopped server the caller lets go is freed, with its loops and its handler.
///
/// **Thread safety:** Safe to call from any thread; the mutable state is confined to the accept loop's queue.
public final class Server: @unchecked Sendable {  // Mutable state is confined to `acceptLoop.queue`.
    /// Handles one request on the connection's loop; answer through the ``Responder`` (now or later). The
    /// request is the handler's to keep (`consuming`): one that stores it, as a route's context does, takes it
    /// over rather than copying it (a copy retains, and later releases, each of the head's strings and arrays).
    public typealias Handler = @Sendable (consuming Request, Responder) -> Void

    /// The port the listener is bound to (the kernel's choice when configured as 0). // Immutable.
    public let port: Int
    /// The configuration the server runs with. // Immutable.
    public let configuration: Configuration
    /// The loops connections run on. // Immutable.
    public let group: EventLoopGroup
    /// The connection limit in force: ``Configuration/maxConnections`` clamped to the open-file limit. // Immutable.
    public let connectionLimit: ConnectionLimit

    /// Takes one connection off the listener: ``Socket/accept(_:)``, or a test's stand-in that injects failures.
    package typealias Acceptor = @Sendable (_ listener: Int32) throws(IOError) -> IOResult<Int32>

    let acceptLoop: EventLoop  // Immutable.
    private let listener: Int32  // Immutable.
    private let acceptor: Acceptor  // Immutable.
    /// Released to answer one connection `503` when `accept` fails for want of descriptors. // Accept-loop-confined.
    private var spare = SpareDescriptor()
    /// Connections answered `503` here, kept until their peers read it. // Accept-loop-confined.
    private var lingering = LingeringClose()
    private(set) var contexts: [LoopContext] = []  // Set once in start; then immutable.
    private var acceptSource: (any DispatchSourceRead)?  // Accept-loop-confined.
    private var acceptSuspended = false  // Accept-loop-confined.
    /// Whether the listening descriptor is still open (its source's cancel handler closes it). // Accept-loop-confined.
    private var listenerOpen = true
    private var nextContext = 0  // Accept-loop-confined.
    private(set) var openConnections = 0  // Accept-loop-confined.
    /// Open connections accepted into the probe reserve (counted apart from ``openConnections``). // Accept-loop-confined.
    private(set) var openReserveConnections = 0
    /// Whether ``beginDraining()`` was called. // Accept-loop-confined.
    private var draining = false
    private var lifecycle = Lifecycle.running  // Accept-loop-confined.

    /// Where the server is in its life.
    private enum Lifecycle {
        /// Accepting. Next: `shuttingDown`.
        case running
        /// Not accepting; waiting for connections to finish, then calling these. Next: `stopped`.
        case shuttingDown(completions: [@Sendable () -> Void])
        /// Every connection closed, timers stopped. Final.
        case stopped
    }

    private init(
        port: Int,
        listener: Int32,
        configuration: Configuration,
        group: EventLoopGroup,
        connectionLimit: ConnectionLimit,
        acceptor: @escaping Acceptor
    ) {
        self.port = port
        self.listener = listener
        self.configuration = configuration
        self.group = group
        self.connectionLimit = connectionLimit
        self.acceptor = acceptor
        self.acceptLoop = group.loops[0]
    }

    /// Binds, listens and starts accepting.
    ///
    /// Also, once per process: ignores `SIGPIPE` and raises the open-file soft limit to the hard limit. Then it
    /// clamps ``Configuration/maxConnections`` to that limit minus a reserve (``connectionLimit`` says what is in
    /// force; log it when ``ConnectionLimit/isClamped``).
    /// - Parameters:
    ///   - configuration: Address, limits, timeouts and watermarks.
    ///   - group: The loops to run connections on; by default a new group with one loop per core.
    ///   - handler: Called on the connection's loop for every request.
    /// - Returns: The running server; ``port`` tells the bound port.
    /// - Throws: ``IOError`` if the address cannot be bound.
    public static func start(
        configuration: Configuration = .init(),
        group: EventLoopGroup? = nil,
        handler: @escaping Handler
    ) throws(IOError) -> Server {
        try start(configuration: configuration, group: group, acceptor: Socket.accept, handler: handler)
    }

    /// ``start(configuration:group:handler:)`` with the call that accepts connections replaced (tests inject
    /// `EMFILE` with it).
    package static func start(
        configuration: Configuration = .init(),
        group: EventLoopGroup? = nil,
        acceptor: @escaping Acceptor,
        handler: @escaping Handler
    ) throws(IOError) -> Server {
        SystemEnvironment.ignoreBrokenPipeSignal()
        let openFileLimit = SystemEnvironment.raiseOpenFileLimit()
        let backlog = Int32(clamping: configuration.backlog)
        let (fd, port) = try Socket.makeListener(host: configuration.host, port: configuration.port, backlog: backlog)
        let group = group ?? EventLoopGroup()
        let limit = ConnectionLimit(
            configured: configuration.maxConnections,
            openFileLimit: openFileLimit,
            reserved: configuration.reservedFileDescriptors,
            loopCount: group.loops.count,
            probeReserve: configuration.reserveConnectionAllows == nil ? 0 : configuration.probeConnectionReserve
        )
        let server = Server(
            port: port,
            listener: fd,
            configuration: configuration,
            group: group,
            connectionLimit: limit,
            acceptor: acceptor
        )
        // Opened before the first accept, so it holds a low slot that a connection can reuse.
        server.spare.reopen()
        for loop in server.group.loops {
            loop.execute { try? loop.preparePoller() }  // queued before any connection is handed to the loop
        }
        server.contexts = server.group.loops.map { loop in
            LoopContext(loop: loop, configuration: configuration, handler: handler) { [server] reserve in
                server.acceptLoop.execute { server.connectionClosed(reserve: reserve) }
            }
        }
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: server.acceptLoop.queue)
        source.setEventHandler { [server] in server.acceptConnections() }
        // Runs on the accept loop once the source can fire no more; only then is the port given back, and only
        // then may a shutdown complete (whoever waits on it may connect again and must be refused).
        source.setCancelHandler { [server] in
            Socket.close(fd)
            server.listenerOpen = false
            server.finishShutdownIfQuiet()
        }
        server.acceptSource = source
        source.activate()
        return server
    }

    // MARK: Accepting (accept loop)

    /// What one attempt to take a connection off the listener gave.
    private enum AcceptOutcome {
        /// A connection to serve.
        case accepted(Int32)
        /// The backlog is empty.
        case drained
        /// A connection was taken and answered at once (`503` from the spare slot, or reset by its peer).
        case handled
        /// Nothing can be accepted now: pause accepting briefly rather than spin on a readable listener.
        case backOff
    }

    private func acceptConnections() {
        for _ in 0..<128 {
            let fd: Int32
            switch acceptOne() {
            case .accepted(let accepted):
                fd = accepted
            case .drained:
                return
            case .handled:
                continue
            case .backOff:
                backOffAccepting()
                return
            }
            guard case .running = lifecycle else {
                reject(fd, body: "too many connections\n")
                continue
            }
            let reserve: Bool
            if openConnections < connectionLimit.effective {
                reserve = false
                openConnections += 1
            } else if openReserveConnections < connectionLimit.probeReserve {
                // Full: this one may still serve a probe (see ``Configuration/reserveConnectionAllows``).
                reserve = true
                openReserveConnections += 1
            } else {
                reject(fd, body: "too many connections\n")
                continue
            }
            let context = contexts[nextContext]
            nextContext = nextContext + 1 == contexts.count ? 0 : nextContext + 1
            if context.loop === acceptLoop {
                context.open(fd, reserve: reserve)
            } else {
                context.loop.execute { context.open(fd, reserve: reserve) }
            }
        }
    }

    private func acceptOne() -> AcceptOutcome {
        do {
            switch try acceptor(listener) {
            case .wouldBlock:
                return .drained
            case .processed(let fd):
                return .accepted(fd)
            }
        } catch {
            if error.isOutOfDescriptors { return shedFromSpareSlot() }
            return error.isAbortedConnection ? .handled : .backOff  // ENOBUFS, ENOMEM…: "not now"
        }
    }

    /// Out of descriptors: frees the spare's slot, accepts into it, answers `503` and closes, then takes the
    /// slot back, so waiting clients hear "retry later" instead of nothing.
    private func shedFromSpareSlot() -> AcceptOutcome {
        guard spare.release() else { return .backOff }
        defer { spare.reopen() }
        do {
            switch try acceptor(listener) {
            case .wouldBlock:
                return .drained
            case .processed(let fd):
                reject(fd, body: "out of file descriptors\n")
                return .handled
            }
        } catch {
            return error.isAbortedConnection ? .handled : .backOff
        }
    }

    /// Pauses accepting for 100 ms: connections wait in the backlog instead of the loop spinning on a listener
    /// it cannot accept from.
    private func backOffAccepting() {
        guard let acceptSource, !acceptSuspended else { return }
        acceptSuspended = true
        acceptSource.suspend()
        acceptLoop.queue.asyncAfter(deadline: .now() + .milliseconds(100)) { [self] in
            resumeAccepting()
        }
    }

    private func resumeAccepting() {
        guard acceptSuspended else { return }
        acceptSuspended = false
        if case .running = lifecycle { spare.reopen() }
        acceptSource?.resume()
    }

    /// Answers `503` with `Retry-After` without reading the request, and closes.
    private func reject(_ fd: Int32, body: String) {
        var buffer = OutboundBuffer()
        var dates = DateCache()  // a rare answer: formatted afresh
        ResponseHead.write(
            status: .serviceUnavailable,
            headers: ["Content-Type": "text/plain; charset=utf-8", "Retry-After": "1"],
            framing: .contentLength(body.utf8.count),
            connection: .close,
            into: &buffer,
            dates: &dates
        )
        buffer.append(body)
        _ = try? Socket.send(fd, buffer.readableBytes)
        Socket.shutdownWrite(fd)
        _ = lingering.linger(fd, on: acceptLoop.queue) { [self] in
            lingering.forget(fd)
            if case .running = lifecycle { spare.reopen() }  // the slot it held may be the spare's
        }
    }

    private func connectionClosed(reserve: Bool) {
        if reserve { openReserveConnections -= 1 } else { openConnections -= 1 }
        finishShutdownIfQuiet()
    }

    // MARK: Draining and shutdown

    /// Begins draining, for the delay between `SIGTERM` and ``shutdown(deadline:completion:)``: the server goes
    /// on accepting and answering, but every response from now on says `Connection: close` (so a keep-alive
    /// client moves to another replica after the answer it is waiting for, rather than having a request cut
    /// when the listener closes), and a connection idle for ``Configuration/drainIdleTimeout`` is closed
    /// gracefully: our side shut first, so the client reads an orderly end before it writes again, and a
    /// request already waiting in its receive buffer is answered first. Streams go on until the shutdown.
    ///
    /// Calling it again, or once the shutdown began (which quiesces every connection itself), does nothing.
    public func beginDraining() {
        acceptLoop.execute { [self] in
            guard !draining, case .running = lifecycle else { return }
            draining = true
            for context in contexts {
                context.loop.execute { context.drain() }
            }
        }
    }

    /// Shuts down gracefully: stops accepting, lets in-flight requests finish, closes idle keep-alive
    /// connections, calls streaming responses' ``BodyWriter/onShutdown``, and force-closes whatever is
    /// still open after `deadline`. Then calls `completion` (on the accept loop).
    ///
    /// Calling it again while shutting down only adds the completion; after the server stopped, the
    /// completion is called at once.
    public func shutdown(deadline: Duration = .seconds(10), completion: (@Sendable () -> Void)? = nil) {
        acceptLoop.execute { [self] in
            switch lifecycle {
            case .stopped:
                completion?()
                return
            case .shuttingDown(var completions):
                if let completion { completions.append(completion) }
                lifecycle = .shuttingDown(completions: completions)
                return
            case .running:
                lifecycle = .shuttingDown(completions: completion.map { [$0] } ?? [])
            }
            resumeAccepting()  // a suspended source never completes its cancellation
            acceptSource?.cancel()
            acceptSource = nil
            for context in contexts {
                context.loop.execute { context.shutdown() }
            }
            let nanoseconds = Int(clamping: deadline.clampedNanoseconds)
            // Weak: until the last connection closes, the contexts' callbacks keep the server alive; once it
            // has stopped, this timer must not hold it (and the whole application behind its handler) for
            // the rest of the grace period.
            acceptLoop.queue.asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { [weak self] in
                guard let self, case .shuttingDown = lifecycle else { return }
                for context in contexts {
                    context.loop.execute { context.forceCloseAll() }
                }
            }
            finishShutdownIfQuiet()
        }
    }

    /// Shuts down gracefully (see ``shutdown(deadline:completion:)``) and returns once it completed.
    public func shutdown(deadline: Duration = .seconds(10)) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            shutdown(deadline: deadline) { continuation.resume() }
        }
    }

    /// Completes a shutdown once nothing is left open: no connection, no reserve connection, no listener.
    private func finishShutdownIfQuiet() {
        guard case .shuttingDown(let completions) = lifecycle, openConnections == 0, openReserveConnections == 0,
            !listenerOpen
        else { return }
        lifecycle = .stopped
        lingering.closeAll()
        _ = spare.release()
        let group = DispatchGroup()
        for context in contexts {
            group.enter()
            context.loop.execute {
                context.stopTimer()
                context.detach()
                group.leave()
            }
        }
        group.notify(queue: acceptLoop.queue) {
            for completion in completions { completion() }
        }
    }
}
