import Dispatch
import EventLoops

/// One accepted socket: reads requests into the parser, hands each to the handler, writes responses.
///
/// The lifecycle is ``ConnectionStateMachine``'s, deadlines and any open stream included; this class
/// carries out its actions against the socket, the poller and the ``OutboundBuffer``. Its work is split
/// by job over three files:
///
/// - this one: start, readiness, the machine's actions, deadlines, shutdown and tear-down;
/// - `Connection+Reading.swift`: reading, parsing and pipelining requests, and handing them over;
/// - `Connection+Writing.swift`: writing responses (fixed and streamed), flushing, and what the poller
///   watches. Responses to pipelined requests that the handler answers within the same loop turn are
///   coalesced into one `send(2)`.
///
/// **Ownership:** Retained by its loop's ``LoopContext`` registry and the loop's poll registration while
/// open; ``Responder``s and ``BodyWriter``s hold it strongly too, so a late answer finds a closed connection
/// rather than freed memory.
///
/// **Thread safety:** Confined to its connection's loop queue; every entry point checks it.
final class Connection: PollTarget, @unchecked Sendable {  // All mutable state is confined to `loop.queue`.
    let fd: Int32  // Immutable.
    let loop: EventLoop  // Immutable.
    let context: LoopContext  // Immutable.
    /// The peer's IP address as text, read once at accept (``Request/remoteAddress``). // Immutable.
    let remoteAddress: String
    /// Accepted into the probe reserve (beyond ``Server/ConnectionLimit/effective``): only requests that
    /// ``Server/Configuration/reserveConnectionAllows`` admits are served, one per connection; any other gets
    /// `503` with `Retry-After`. // Immutable.
    let isReserve: Bool
    /// The TLS layer of a connection on a TLS server (``Server/Configuration/tls``), nil on a plain one: the
    /// one branch TLS adds to reading and flushing (`Connection+TLS.swift`). // Immutable.
    let tls: TLSLayer?
    /// Whether the send buffer was capped for a streamed response (once per connection). // Loop-confined.
    var sendBufferCapped = false
    /// The position in the loop's registry (maintained by the registry). // Loop-confined.
    var registryIndex = -1
    /// When an open stream's socket is next checked for a vanished peer (``DeadPeerDetection``). // Loop-confined.
    var nextPeerCheck: UInt64 = 0

    // The loop-confined state that every request touches is `@exclusivity(unchecked)` (checked after all in a
    // build with `-DSPOUT_CHECKED_EXCLUSIVITY`): the loop's serial queue already rules out overlapping access from
    // other threads, and the dynamic checks, which the optimizer cannot drop for state that closures and other
    // files touch, are a measurable share of a request's instructions. The outbound buffer keeps its checks:
    // lending it to a producer is where a re-entrant access could happen. So does what only streams or the
    // connection's start and end touch.

    /// The lifecycle, deadlines and open stream. // Loop-confined.
    #if SPOUT_CHECKED_EXCLUSIVITY
        var machine: ConnectionStateMachine<BodyWriter>
    #else
        // Unchecked: bench/tools/request_cost.sh SCOPE=loop (/health, fib JSON): on every request's path.
        @exclusivity(unchecked) var machine: ConnectionStateMachine<BodyWriter>
    #endif

    // Reading (Connection+Reading.swift).
    /// The request parser. // Loop-confined.
    #if SPOUT_CHECKED_EXCLUSIVITY
        var parser: RequestParser
    #else
        // Unchecked: bench/tools/request_cost.sh SCOPE=loop (/health, fib JSON): on every request's path.
        @exclusivity(unchecked) var parser: RequestParser
    #endif
    /// The head of the request whose body is being read. // Loop-confined.
    #if SPOUT_CHECKED_EXCLUSIVITY
        var requestHead: RequestHead?
    #else
        // Unchecked: bench/tools/request_cost.sh SCOPE=loop (/health, fib JSON): on every request's path.
        @exclusivity(unchecked) var requestHead: RequestHead?
    #endif
    /// The body read so far of the request being read. // Loop-confined.
    #if SPOUT_CHECKED_EXCLUSIVITY
        var requestBody: [UInt8] = []
    #else
        // Unchecked: bench/tools/request_cost.sh SCOPE=loop (/health, fib JSON): on every request's path.
        @exclusivity(unchecked) var requestBody: [UInt8] = []
    #endif
    /// Increments per delivered request, so a responder for an old request is recognised. // Loop-confined.
    #if SPOUT_CHECKED_EXCLUSIVITY
        var requestID: UInt64 = 0
    #else
        // Unchecked: bench/tools/request_cost.sh SCOPE=loop (/health, fib JSON): on every request's path.
        @exclusivity(unchecked) var requestID: UInt64 = 0
    #endif
    /// Called if the connection closes while the current request still awaits its answer; set through
    /// ``Responder/onAbandon(_:)``, dropped once the request is answered. // Loop-confined.
    #if SPOUT_CHECKED_EXCLUSIVITY
        var abandonHandler: (() -> Void)?
    #else
        // Unchecked: bench/tools/request_cost.sh SCOPE=loop (/health, fib JSON): on every request's path.
        @exclusivity(unchecked) var abandonHandler: (() -> Void)?
    #endif
    /// The last request answered (fixed or streamed), to tell "closed before the answer" from "after".
    /// // Loop-confined.
    #if SPOUT_CHECKED_EXCLUSIVITY
        var answeredRequestID: UInt64 = 0
    #else
        // Unchecked: bench/tools/request_cost.sh SCOPE=loop (/health, fib JSON): on every request's path.
        @exclusivity(unchecked) var answeredRequestID: UInt64 = 0
    #endif

    // Writing (Connection+Writing.swift).
    var outbound = OutboundBuffer()  // Loop-confined.
    /// The chunked framing of a streamed response. // Loop-confined.
    var chunked = ChunkedEncoder()
    /// What the loop's poller watches this socket for. // Loop-confined.
    #if SPOUT_CHECKED_EXCLUSIVITY
        var interest = PollInterest(readable: true)
    #else
        // Unchecked: bench/tools/request_cost.sh SCOPE=loop (/health, fib JSON): on every request's path.
        @exclusivity(unchecked) var interest = PollInterest(readable: true)
    #endif
    /// Whether a send came back short, so the socket is watched for room. // Loop-confined.
    #if SPOUT_CHECKED_EXCLUSIVITY
        var awaitsWritable = false
    #else
        // Unchecked: bench/tools/request_cost.sh SCOPE=loop (/health, fib JSON): on every request's path.
        @exclusivity(unchecked) var awaitsWritable = false
    #endif
    /// Whether we are inside the parse loop (answers are flushed by it), or a flush is already scheduled
    /// for the end of this loop turn. // Loop-confined.
    #if SPOUT_CHECKED_EXCLUSIVITY
        var phase = Phase.resting
    #else
        // Unchecked: bench/tools/request_cost.sh SCOPE=loop (/health, fib JSON): on every request's path.
        @exclusivity(unchecked) var phase = Phase.resting
    #endif
    /// When the kernel last accepted a byte, or output became pending (monotonic ns). // Loop-confined.
    #if SPOUT_CHECKED_EXCLUSIVITY
        var lastWriteProgress: UInt64
    #else
        // Unchecked: bench/tools/request_cost.sh SCOPE=loop (/health, fib JSON): on every request's path.
        @exclusivity(unchecked) var lastWriteProgress: UInt64
    #endif

    /// Whether we are inside the parse loop, or have scheduled a flush; re-entrancy as a state.
    enum Phase {
        /// Neither: an answer arriving now must flush (and resume parsing) itself.
        case resting
        /// Inside ``Connection/processBufferedRequests()``: answers are flushed when it ends.
        case parsing
        /// A flush is scheduled for the end of the current loop turn.
        case flushScheduled
    }

    init(fd: Int32, context: LoopContext, isReserve: Bool = false, tls: TLSLayer? = nil) {
        self.fd = fd
        self.tls = tls
        self.context = context
        self.isReserve = isReserve
        self.loop = context.loop
        self.parser = RequestParser(configuration: context.configuration.parser)
        self.remoteAddress = Socket.peerAddress(fd)
        let now = SystemEnvironment.monotonicNanoseconds()
        machine = ConnectionStateMachine(now: now)
        lastWriteProgress = now
    }

    /// Registers with the loop's poller and starts reading. Call once, on the loop.
    func start() {
        loop.preconditionInEventLoop()
        do {
            try loop.register(fd, self, interest: interest)
        } catch {
            handle(machine.mustClose())
            return
        }
        if isReserve || context.isDraining { machine.quiesce() }
        if context.isShuttingDown { shutdownRequested() }
    }

    func pollReady(_ event: PollEvent) {
        if event.failed {
            handle(machine.mustClose())
            return
        }
        if event.readable { readable() }
        if event.peerHalfClosed, machine.isStreaming || abandonHandler != nil {
            handle(machine.peerClosed())  // the reader of a stream, or the client of a pending answer, left
            return
        }
        if event.writable { flush() }
    }

    // MARK: Actions

    /// Carries out what the machine decided.
    func handle(_ action: ConnectionStateMachine<BodyWriter>.Action) {
        switch action {
        case .none:
            break
        case .sendContinue:
            prepareOutbound()
            outbound.append("HTTP/1.1 100 Continue\r\n\r\n" as StaticString)
            flush()
        case .deliverRequest:
            deliverRequest()
        case .readNextRequest:
            if case .parsing = phase { return }  // the parse loop goes on by itself
            processBufferedRequests()
            scheduleFlush()
        case .closeAfterFlush:
            scheduleFlush()
        case .sendErrorAndClose(let status, let reason):
            writeErrorResponse(status, reason: reason)
            scheduleFlush()
        case .startLingering:
            if let tls { sendCloseNotify(tls) }
            Socket.shutdownWrite(fd)
        case .notifyStreamOfShutdown(let writer):
            writer.shutdownRequested()
        case .endStream(let writer, let mode, let next):
            endStream(writer, mode: mode, next: next)
        case .close(let writer):
            tearDown(endingStream: writer)
        case .closeStalled(let writer):
            writer?.writeStalled()
            tearDown(endingStream: writer)
        }
    }

    // MARK: Deadlines and shutdown (called by LoopContext)

    /// Checks this connection's deadlines; called by the loop's coarse timer.
    func checkDeadlines(now: UInt64) {
        if let tls, tlsHandshakeExpired(tls, now: now) { return }
        if let seconds = context.configuration.streamDeadPeerSeconds, machine.isStreaming, now >= nextPeerCheck {
            nextPeerCheck = now &+ DeadPeerDetection.checkInterval(seconds: seconds)
            if let acknowledgements = DeadPeerDetection.acknowledgements(fd),
                DeadPeerDetection.hasVanished(acknowledgements, seconds: seconds)
            {
                // Reset rather than a FIN the peer will never acknowledge: the kernel lets go of the unsent data.
                DeadPeerDetection.resetOnClose(fd)
                handle(machine.mustClose())
                return
            }
        }
        handle(
            machine.deadlinesChecked(
                now: now,
                pendingOutputSince: bufferedOutputCount == 0 ? nil : lastWriteProgress,
                timeouts: context.timeouts,
                hasUnreadInput: hasUnreadInput
            )
        )
    }

    /// The server began draining: no request after the current one, and closed gracefully once idle for
    /// ``Server/Configuration/drainIdleTimeout`` (now, if it has been idle that long already).
    func drainRequested() {
        machine.quiesce()
        checkDeadlines(now: SystemEnvironment.monotonicNanoseconds())
    }

    func shutdownRequested() {
        handle(machine.shutdownRequested(hasPendingOutput: bufferedOutputCount > 0, hasUnreadInput: hasUnreadInput))
    }

    /// Whether bytes of a request wait to be parsed: in the parser, or unread in the kernel's receive buffer.
    func hasUnreadInput() -> Bool {
        parser.bufferedByteCount > 0 || (Socket.unreadByteCount(fd) ?? 0) > 0
    }

    func forceClose() {
        handle(machine.mustClose())
    }

    /// Releases everything and closes the descriptor; then the producer of a stream that was still open
    /// hears that it closed.
    private func tearDown(endingStream writer: BodyWriter?) {
        context.remove(self)
        let abandoned = abandonHandler
        abandonHandler = nil
        requestHead = nil
        requestBody = []
        parser = RequestParser(configuration: context.configuration.parser)
        chunked.reset()
        outbound.consume(outbound.count)
        if let storage = outbound.takeStorageIfEmpty() { storage.deallocate() }
        loop.deregister(fd)
        Socket.close(fd)
        context.connectionClosed(reserve: isReserve)
        if let tls { tlsClosed(tls) }
        abandoned?()
        writer?.streamClosed()
    }
}
