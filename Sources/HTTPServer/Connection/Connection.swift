import Dispatch

/// One accepted socket: reads requests into the parser, hands each to the handler, writes responses.
///
/// The lifecycle is ``ConnectionStateMachine``'s; this class carries out its actions against the socket,
/// the Dispatch sources and the ``OutboundBuffer``. Responses to pipelined requests that the handler
/// answers within the same loop turn are coalesced into one `send(2)`.
///
/// **Ownership:** Retained by its loop's ``LoopContext`` registry and the loop's poll registration while
/// open; ``Responder``s and ``BodyWriter``s hold it strongly too, so a late
/// answer finds a closed connection rather than freed memory.
///
/// **Thread safety:** Confined to its connection's loop queue; every entry point checks it.
final class Connection: PollTarget, @unchecked Sendable {  // All mutable state is confined to `loop.queue`.
    let fd: Int32  // Immutable.
    let loop: EventLoop  // Immutable.
    let context: LoopContext  // Immutable.
    /// The peer's IP address as text, read once at accept (``Request/remoteAddress``). // Immutable.
    let remoteAddress: String
    /// The position in the loop's registry (maintained by the registry). // Loop-confined.
    var registryIndex = -1

    private var machine = ConnectionStateMachine()  // Loop-confined.
    private var parser: RequestParser  // Loop-confined.
    private var outbound = OutboundBuffer()  // Loop-confined.
    private var chunked = ChunkedEncoder()  // Loop-confined.
    /// What the loop's poller watches this socket for. // Loop-confined.
    private var interest = PollInterest(readable: true)
    /// Whether a send came back short, so the socket is watched for room. // Loop-confined.
    private var awaitsWritable = false
    private var requestHead: RequestHead?  // Loop-confined.
    private var requestBody: [UInt8] = []  // Loop-confined.
    /// Increments per delivered request, so a responder for an old request is recognised. // Loop-confined.
    private(set) var requestID: UInt64 = 0
    /// The streaming response's writer, while one is open. // Loop-confined.
    private var writer: BodyWriter?
    /// Called if the connection closes while the current request still awaits its answer; set through
    /// ``Responder/onAbandon(_:)``, dropped once the request is answered. // Loop-confined.
    private var abandonHandler: (() -> Void)?
    /// The last request answered (fixed or streamed), to tell "closed before the answer" from "after". // Loop-confined.
    private var answeredRequestID: UInt64 = 0
    /// The response-delivery phase: whether we are inside the parse loop (answers are flushed by it) or
    /// a flush is already scheduled for the end of this loop turn. // Loop-confined.
    private var phase = Phase.resting
    /// When the current timer started (monotonic ns). // Loop-confined.
    private var timerStart: UInt64
    /// When the kernel last accepted a byte, or output became pending (monotonic ns). // Loop-confined.
    private var lastWriteProgress: UInt64
    /// The writability signal and current high watermark of a streaming response. // Loop-confined.
    private var writability = Writability()

    /// Whether we are inside the parse loop, or have scheduled a flush; re-entrancy as a state.
    private enum Phase {
        /// Neither: an answer arriving now must flush (and resume parsing) itself.
        case resting
        /// Inside ``Connection/processBufferedRequests()``: answers are flushed when it ends.
        case parsing
        /// A flush is scheduled for the end of the current loop turn.
        case flushScheduled
    }

    /// The writer-facing flow-control signal.
    struct Writability {
        var isWritable = true
        var highWatermark = 0
        var lowWatermark = 0
        /// Bytes of the current stream the kernel has taken; see ``Connection/provenReaderBytes``.
        var bytesTaken = 0
        /// The storage the outbound buffer gets in one go for the next batch (see
        /// ``Connection/updateHighWatermark(starting:)``); 0 when the high watermark does not adapt.
        var reservedBytes = 0
    }

    /// Until the kernel has taken this much of a stream, its high watermark stays at or below
    /// ``unprovenHighWatermarkBytes``. Loopback and LAN kernels buffer a few MiB per socket (send queue
    /// plus the peer's receive buffer) even for a reader that never reads, so only bytes beyond that
    /// prove the reader is really consuming; a stalled reader thus never gets full-size batches.
    static let provenReaderBytes = 8 * 1024 * 1024
    /// The high watermark cap before ``provenReaderBytes``.
    static let unprovenHighWatermarkBytes = 16 * 1024

    init(fd: Int32, context: LoopContext) {
        self.fd = fd
        self.context = context
        self.loop = context.loop
        self.parser = RequestParser(configuration: context.configuration.parser)
        self.remoteAddress = Socket.peerAddress(fd)
        let now = SystemEnvironment.monotonicNanoseconds()
        timerStart = now
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
        if context.isShuttingDown { handle(machine.shutdownRequested(hasPendingOutput: !outbound.isEmpty)) }
    }

    func pollReady(_ event: PollEvent) {
        if event.failed {
            handle(machine.mustClose())
            return
        }
        if event.readable { readable() }
        if event.peerHalfClosed, machine.streamingContext != nil || abandonHandler != nil {
            handle(machine.peerClosed())  // the reader of a stream, or the client of a pending answer, left
            return
        }
        if event.writable { flush() }
    }

    // MARK: Reading

    private func readable() {
        guard machine.wantsToRead else { return }
        defer { updateInterest() }
        let buffer = loop.readBuffer
        let count: Int
        do {
            switch try Socket.read(fd, into: buffer) {
            case .wouldBlock:
                return
            case .processed(let read):
                count = read
            }
        } catch {
            handle(machine.mustClose())
            return
        }
        if count == 0 {
            handle(machine.peerClosed())
            return
        }
        let now = SystemEnvironment.monotonicNanoseconds()
        switch machine.timerKind {
        case .idle:
            timerStart = now
        case .bodyRead:
            timerStart = now  // any body byte is progress
        case .headRead, .linger, .none:
            break
        }
        if machine.state == .lingering { return }  // discarding input until the peer closes
        parser.append(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
        processBufferedRequests()
        flush()
    }

    /// Pulls parser events and delivers requests until the parser needs more bytes or a response is pending.
    private func processBufferedRequests() {
        let outerPhase = phase
        phase = .parsing
        defer { if case .parsing = phase { phase = outerPhase } }
        while machine.isReadingRequest {
            if machine.state == .idle && parser.bufferedByteCount > 0 {
                machine.requestBytesReceived()
                timerStart = SystemEnvironment.monotonicNanoseconds()
            }
            let event: ParseEvent
            do {
                event = try parser.next()
            } catch {
                handle(machine.parseFailed(error.status), reason: error.description)
                return
            }
            switch event {
            case .needMoreData:
                if parser.bufferedByteCount > 0 { machine.requestBytesReceived() }
                return
            case .head(let head):
                let action = machine.headReceived(
                    isSupportedMethod: head.method == .get || context.configuration.supportedMethods.contains(head.method),
                    isHead: head.method == .head,
                    version: head.version,
                    keepAlive: head.keepAlive,
                    expectsContinue: head.expectsContinue
                )
                requestHead = head
                timerStart = SystemEnvironment.monotonicNanoseconds()
                handle(action, reason: "method \(head.method.rawValue) is not implemented")
            case .body(let bytes):
                if requestBody.isEmpty { requestBody = Array(bytes) } else { requestBody.append(contentsOf: bytes) }
            case .end:
                handle(machine.requestEnded())
            }
        }
    }

    private func deliverRequest() {
        guard let head = requestHead else { preconditionFailure("internal inconsistency: request without head") }
        let request = Request(head: head, body: requestBody, remoteAddress: remoteAddress)
        requestHead = nil
        requestBody = []
        requestID &+= 1
        context.handler(request, Responder(connection: self, requestID: requestID))
    }

    // MARK: Actions

    private func handle(_ action: ConnectionStateMachine.Action, reason: String = "") {
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
            timerStart = SystemEnvironment.monotonicNanoseconds()
            if case .parsing = phase { return }  // the parse loop goes on by itself
            processBufferedRequests()
            scheduleFlush()
        case .closeAfterFlush:
            scheduleFlush()
        case .sendErrorAndClose(let status):
            writeErrorResponse(status, reason: reason)
            scheduleFlush()
        case .startLingering:
            Socket.shutdownWrite(fd)
            timerStart = SystemEnvironment.monotonicNanoseconds()
        case .notifyStreamOfShutdown:
            writer?.shutdownRequested()
        case .close:
            tearDown()
        }
    }

    private func writeErrorResponse(_ status: Status, reason: String) {
        prepareOutbound()
        var body = reason
        body.append("\n")
        let length = body.utf8.count
        ResponseHead.write(
            status: status,
            headers: ["Content-Type": "text/plain; charset=utf-8"],
            framing: .contentLength(length),
            connection: .close,
            into: &outbound,
            loop: loop
        )
        outbound.append(body)
    }

    // MARK: Responding (called through Responder and BodyWriter)

    /// Whether `id` names the request currently awaiting its response.
    func isAwaiting(_ id: UInt64) -> Bool {
        id == requestID && machine.awaitingContext != nil
    }

    func respond(to id: UInt64, status: Status, headers: Headers, body: UnsafeRawBufferPointer) {
        loop.preconditionInEventLoop()
        guard let context = awaitingContext(for: id) else { return }
        requestAnswered(id)
        prepareOutbound()
        let closes = machine.responseCloses(context)
        let hasBody = status.allowsBody
        ResponseHead.write(
            status: status,
            headers: headers,
            framing: hasBody ? .contentLength(body.count) : .none,
            connection: closes ? .close : (context.isHTTP1_0 ? .keepAlive : .omitted),
            into: &outbound,
            loop: loop
        )
        if hasBody && !context.isHead { outbound.append(body) }
        markOutputPending()
        handle(machine.fixedResponseWritten())
        scheduleFlush()
    }

    func startStream(for id: UInt64, status: Status, headers: Headers) -> BodyWriter {
        loop.preconditionInEventLoop()
        guard let context = awaitingContext(for: id) else { return BodyWriter(closedOn: loop) }
        requestAnswered(id)
        machine.streamStarted()
        guard let streaming = machine.streamingContext else { preconditionFailure("internal inconsistency") }
        let closes = machine.responseCloses(streaming)
        let framing: BodyFraming = !status.allowsBody ? .none : (context.isHTTP1_0 ? .untilClose : .chunked)
        updateHighWatermark(starting: true)
        prepareOutbound()
        // The head and the first batch in one allocation, rather than a small one for the head that the
        // first batch then outgrows.
        if outbound.storageCapacity < writability.reservedBytes { outbound.reserveCapacity(writability.reservedBytes) }
        ResponseHead.write(
            status: status,
            headers: headers,
            framing: framing,
            connection: closes ? .close : (context.isHTTP1_0 ? .keepAlive : .omitted),
            into: &outbound,
            loop: loop
        )
        markOutputPending()
        chunked.reset()
        let mode: BodyWriter.Mode =
            context.isHead || !status.allowsBody ? .discard : (framing == .chunked ? .chunked : .raw)
        let writer = BodyWriter(connection: self, mode: mode)
        self.writer = writer
        writability.isWritable = true
        scheduleFlush()
        return writer
    }

    /// Request `id` got its answer (fixed or streamed): its abandon handler no longer applies.
    private func requestAnswered(_ id: UInt64) {
        abandonHandler = nil
        answeredRequestID = id
    }

    /// Installs the handler for the client leaving before request `id` is answered; calls it at once if
    /// the connection has already closed, and drops it if the request was already answered.
    func setAbandonHandler(for id: UInt64, _ handler: @escaping () -> Void) {
        loop.preconditionInEventLoop()
        guard id == requestID else { return }  // a request this connection has moved past: answered
        if machine.awaitingContext != nil {
            abandonHandler = handler
            updateInterest()
        } else if machine.state == .closed, answeredRequestID != id {
            handler()
        }
    }

    private func awaitingContext(for id: UInt64) -> ConnectionStateMachine.RequestContext? {
        guard id == requestID else { return nil }  // an answer to a request this connection moved past
        if let context = machine.awaitingContext { return context }
        if machine.state == .closed { return nil }  // the peer left before the answer
        preconditionFailure("API violation: request \(id) was already answered")
    }

    // MARK: Streaming body (called by BodyWriter on the loop)

    /// Makes sure the outbound buffer has storage (the loop's spare when there is one).
    @inline(__always)
    func prepareOutbound() {
        if outbound.storageCapacity == 0 { loop.lendSpareStorage(to: &outbound) }
    }

    /// Runs `body` with the outbound buffer positioned for body bytes (inside an open chunk).
    @inline(__always)
    func appendBody<R>(chunked isChunked: Bool, _ body: (inout OutboundBuffer) throws -> R) rethrows -> R {
        prepareOutbound()
        if outbound.isEmpty { markOutputPending() }
        if outbound.storageCapacity < writability.reservedBytes { outbound.reserveCapacity(writability.reservedBytes) }
        if isChunked { chunked.openChunkIfNeeded(in: &outbound) }
        let result = try body(&outbound)
        if outbound.count >= writability.highWatermark {
            // A full batch leaves now rather than at the end of the turn: its storage goes back to the
            // loop's spare for the next writer, so a loop turn in which many streams fill a batch each
            // needs one batch of memory, not one per stream. No onWritable from here: the producer is
            // inside its write and simply sees isWritable again if the kernel took everything.
            writability.isWritable = false
            flush(notifiesWriter: false)
        } else {
            scheduleFlush()
        }
        return result
    }

    func finishStream(_ writer: BodyWriter) {
        guard self.writer === writer else { return }
        if writer.mode == .chunked {
            prepareOutbound()
            chunked.finish(in: &outbound)
        }
        self.writer = nil
        markOutputPending()
        handle(machine.streamFinished())
        scheduleFlush()
    }

    /// Sends what is buffered (best effort, one `send(2)`) and closes without ending the body.
    func abortStream() {
        flush(notifiesWriter: false)
        handle(machine.mustClose())
    }

    var isWritable: Bool { writability.isWritable }

    /// The bytes of storage the outbound buffer holds, and of them the bytes queued (for tests).
    var outboundStorage: (capacity: Int, queued: Int) { (outbound.storageCapacity, outbound.count) }

    var writableBytes: Int { max(0, writability.highWatermark &- outbound.count) }

    // MARK: Flushing

    private func markOutputPending() {
        if outbound.isEmpty || !awaitsWritable {
            lastWriteProgress = SystemEnvironment.monotonicNanoseconds()
        }
    }

    /// Flushes at the end of the current loop turn, unless the parse loop will flush anyway.
    private func scheduleFlush() {
        switch phase {
        case .parsing, .flushScheduled:
            return
        case .resting:
            phase = .flushScheduled
            loop.queue.async { [self] in
                if case .flushScheduled = phase { phase = .resting }
                flush()
            }
        }
    }

    /// Sends what is queued: one `send(2)`; after a short write the poller watches for room.
    /// - Parameter notifiesWriter: Whether a not-writable → writable edge calls the writer's `onWritable`.
    private func flush(notifiesWriter: Bool = true) {
        guard machine.state != .closed else { return }
        defer { if machine.state != .closed { updateInterest() } }
        if chunked.hasOpenChunk { chunked.closeChunk(in: &outbound) }
        if !outbound.isEmpty {
            let bytes = outbound.readableBytes
            let sent: Int
            do {
                switch try Socket.send(fd, bytes) {
                case .processed(let count):
                    sent = count
                case .wouldBlock:
                    sent = 0
                }
            } catch {
                handle(machine.mustClose())
                return
            }
            if sent > 0 {
                outbound.consume(sent)
                if writer != nil { writability.bytesTaken &+= sent }
                lastWriteProgress = SystemEnvironment.monotonicNanoseconds()
            }
        }
        if outbound.isEmpty {
            awaitsWritable = false
            if let storage = outbound.takeStorageIfEmpty() { loop.reclaim(storage) }
            if writer != nil { updateHighWatermark() }
            handle(machine.outboundFlushed())
        } else {
            awaitsWritable = true
            if writer != nil { updateHighWatermark() }
            // The kernel refused bytes. A stream whose reader has not proven it reads keeps only what is
            // pending (the next batch, if the reader comes back, reserves the small lagging size again), not
            // the batch sized for a reader keeping up; a proven reader's large storage is kept unless it is
            // mostly empty, as is a fixed response's.
            let tight =
                writer != nil && context.configuration.adaptsHighWatermarkToReader
                && writability.bytesTaken < Connection.provenReaderBytes
            if let storage = outbound.shrink(keepingAtMost: tight ? 1 : 4, minimumCapacity: tight ? 0 : 16 * 1024) {
                loop.reclaim(storage, releasingPages: true)
            }
        }
        if let writer, !writability.isWritable, outbound.count <= writability.lowWatermark {
            writability.isWritable = true
            if notifiesWriter { writer.becameWritable() }
        }
    }

    /// Adapts the high watermark to the reader (see ``Server/Configuration``): it starts at the minimum,
    /// doubles after every flush that the kernel took whole while the peer's window was open (nothing
    /// unsent in the kernel, `SIOCOUTQNSD`), up to the maximum (16 KiB until the reader has taken 8 MiB,
    /// see ``provenReaderBytes``), and falls back to the minimum as soon as
    /// a send comes back short or the kernel holds unsent bytes. A slow reader thus never leaves more
    /// than about one small batch in user space, while a fast one reaches full-size batches in a few flushes.
    ///
    /// The storage reserved for the next batch follows: a batch at the cap (plus slack for the value that
    /// crosses it) while the reader keeps up, so a fast reader's buffer is sized once instead of doubling
    /// towards the cap; one at the minimum while it lags, so a reader whose window closed is not given
    /// (and does not make the heap touch) more than the small batch it can be sent.
    /// - Parameter starting: A new stream (no flush has happened yet).
    private func updateHighWatermark(starting: Bool = false) {
        let configuration = context.configuration
        let maximum = max(1, configuration.highWatermarkBytes)
        let minimum = max(1, min(configuration.minimumHighWatermarkBytes, maximum))
        var high = maximum
        if configuration.adaptsHighWatermarkToReader {
            let lagging = minimum &+ minimum / 4
            if starting {
                writability.bytesTaken = 0
                writability.reservedBytes = lagging
                high = minimum
            } else if outbound.isEmpty, Socket.unsentByteCount(fd) == 0 {
                let cap =
                    writability.bytesTaken >= Connection.provenReaderBytes
                    ? maximum : min(maximum, max(minimum, Connection.unprovenHighWatermarkBytes))
                high = min(cap, max(minimum, writability.highWatermark.multipliedReportingOverflow(by: 2).partialValue))
                writability.reservedBytes = cap &+ cap / 4
            } else {
                high = minimum
                writability.reservedBytes = lagging
            }
        }
        writability.highWatermark = high
        writability.lowWatermark = min(configuration.lowWatermarkBytes, high / 2)
        if outbound.count >= high { writability.isWritable = false }
    }

    // MARK: Readiness

    /// Tells the poller what this socket now waits for, if that changed: bytes while a request is being
    /// read (or while lingering), room while a send is incomplete, and the reader leaving while a stream
    /// is open. Reads pause by dropping `readable` while a response is pending.
    private func updateInterest() {
        let desired = PollInterest(
            readable: machine.wantsToRead,
            writable: awaitsWritable,
            peerHalfClose: machine.streamingContext != nil || abandonHandler != nil
        )
        guard desired != interest else { return }
        interest = desired
        do {
            try loop.updateInterest(fd, desired)
        } catch {
            handle(machine.mustClose())
        }
    }

    // MARK: Timers and shutdown (called by LoopContext)

    /// Checks this connection's deadlines; called by the loop's coarse timer.
    func checkTimers(now: UInt64) {
        let configuration = context.configuration
        let limit: UInt64?
        switch machine.timerKind {
        case .none: limit = nil
        case .idle: limit = outbound.isEmpty ? context.idleTimeoutNanoseconds : nil  // still sending: write-stall rules
        case .headRead: limit = context.headReadTimeoutNanoseconds
        case .bodyRead: limit = context.idleTimeoutNanoseconds
        case .linger: limit = configuration.lingerTimeout.clampedNanoseconds
        }
        if let limit, now &- timerStart >= limit, now >= timerStart {
            handle(machine.timedOut(), reason: "request head not received in time")
            return
        }
        if !outbound.isEmpty, now >= lastWriteProgress, now &- lastWriteProgress >= context.writeStallTimeoutNanoseconds {
            handle(machine.mustClose())
        }
    }

    func shutdownRequested() {
        handle(machine.shutdownRequested(hasPendingOutput: !outbound.isEmpty))
    }

    func forceClose() {
        handle(machine.mustClose())
    }

    /// Releases everything and closes the descriptor.
    private func tearDown() {
        context.remove(self)
        if let abandoned = abandonHandler {
            abandonHandler = nil
            abandoned()
        }
        requestHead = nil
        requestBody = []
        if let writer {
            self.writer = nil
            writer.connectionClosed()
        }
        parser = RequestParser(configuration: context.configuration.parser)
        chunked.reset()
        outbound.consume(outbound.count)
        if let storage = outbound.takeStorageIfEmpty() { storage.deallocate() }
        closeDescriptor()
    }

    private func closeDescriptor() {
        loop.deregister(fd)
        Socket.close(fd)
        context.connectionClosed()
    }
}
