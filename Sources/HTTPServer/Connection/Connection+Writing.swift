import Dispatch
import EventLoops

/// Writing: fixed responses, the open stream's body (for its ``BodyWriter``), flushing to the socket, and
/// what the poller watches. Everything is queued in ``OutboundBuffer`` and sent by one `send(2)` at the end
/// of the loop turn, or at once when a stream's batch reaches its high watermark.
extension Connection {
    // MARK: Fixed responses (called through Responder)

    func writeErrorResponse(_ status: Status, reason: String) {
        prepareOutbound()
        let contentType: String
        let body: [UInt8]
        if let custom = context.configuration.errorResponseBody?(status, reason) {
            (contentType, body) = custom
        } else {
            contentType = "text/plain; charset=utf-8"
            body = Array((reason + "\n").utf8)
        }
        // A 503 the server answers itself (a refused request on a probe-reserve connection) says when to retry.
        let headers: Headers =
            status == .serviceUnavailable
            ? ["Content-Type": contentType, "Retry-After": "1"] : ["Content-Type": contentType]
        ResponseHead.write(
            status: status,
            headers: headers,
            framing: .contentLength(body.count),
            connection: .close,
            into: &outbound,
            dates: &context.dateCache
        )
        outbound.append(contentsOf: body)
    }

    /// Whether `id` names the request currently awaiting its response.
    func isAwaiting(_ id: UInt64) -> Bool {
        id == requestID && machine.awaitingContext != nil
    }

    func respond(
        to id: UInt64,
        status: Status,
        headers: Headers,
        appending extra: ExtraFields = ExtraFields(),
        body: UnsafeRawBufferPointer
    ) {
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
            dates: &self.context.dateCache,
            appending: extra
        )
        if hasBody && !context.isHead { outbound.append(body) }
        markOutputPending()
        handle(machine.fixedResponseWritten(now: SystemEnvironment.monotonicNanoseconds()))
        scheduleFlush()
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
        } else if machine.isClosed, answeredRequestID != id {
            handler()
        }
    }

    private func awaitingContext(for id: UInt64) -> ConnectionStateMachine<BodyWriter>.RequestContext? {
        guard id == requestID else { return nil }  // an answer to a request this connection moved past
        if let context = machine.awaitingContext { return context }
        if machine.isClosed { return nil }  // the peer left before the answer
        preconditionFailure("API violation: request \(id) was already answered")
    }

    // MARK: The open stream (called through Responder and BodyWriter)

    /// Opens a streamed response and returns its writer; a writer that is closed from the start if the
    /// client already left.
    func startStream(for id: UInt64, status: Status, headers: Headers) -> BodyWriter {
        loop.preconditionInEventLoop()
        let writer = BodyWriter(connection: self)
        guard let request = awaitingContext(for: id) else { return writer }
        requestAnswered(id)
        let framing: BodyFraming = !status.allowsBody ? .none : (request.isHTTP1_0 ? .untilClose : .chunked)
        let mode: StreamBodyMode =
            request.isHead || !status.allowsBody ? .discard : (framing == .chunked ? .chunked : .raw)
        let closes = machine.streamStarted(writer: writer, mode: mode, watermark: context.watermark)
        if let cap = context.configuration.streamSendBufferBytes, !sendBufferCapped {
            // A stalled reader would otherwise pin the autotuned kernel buffer (megabytes) for the write-stall
            // timeout; see ``Server/Configuration/streamSendBufferBytes``.
            sendBufferCapped = true
            Socket.setSendBufferBytes(fd, cap)
        }
        if let seconds = context.configuration.streamDeadPeerSeconds {
            let stall = Int(context.configuration.writeStallTimeout.components.seconds)
            DeadPeerDetection.arm(fd, seconds: seconds, stalledReaderSeconds: stall)
        }
        prepareOutbound()
        // The head and the first batch in one allocation, rather than a small one for the head that the
        // first batch then outgrows.
        reserveForNextBatch()
        ResponseHead.write(
            status: status,
            headers: headers,
            framing: framing,
            connection: closes ? .close : (request.isHTTP1_0 ? .keepAlive : .omitted),
            into: &outbound,
            dates: &context.dateCache
        )
        markOutputPending()
        chunked.reset()
        scheduleFlush()
        return writer
    }

    /// Whether `writer`'s stream is open.
    func isOpen(_ writer: BodyWriter) -> Bool {
        machine.stream(of: writer) != nil
    }

    /// Whether `writer`'s stream is open and writable.
    func isWritable(_ writer: BodyWriter) -> Bool {
        machine.stream(of: writer)?.isWritable ?? false
    }

    /// How many more bytes `writer` may write before its high watermark (0 unless open and writable).
    func writableBytes(_ writer: BodyWriter) -> Int {
        machine.stream(of: writer)?.writableBytes(buffered: bufferedOutputCount) ?? 0
    }

    /// Runs `body` with the outbound buffer positioned for `writer`'s body bytes (inside an open chunk),
    /// if its stream is open and its body is not discarded; a batch that reaches the high watermark leaves
    /// at once.
    @inline(__always)
    func appendBody(from writer: BodyWriter, _ body: (inout OutboundBuffer) -> Void) {
        guard let stream = machine.stream(of: writer), stream.mode != .discard else { return }
        prepareOutbound()
        if outbound.isEmpty { markOutputPending() }
        reserveForNextBatch()
        if stream.mode == .chunked { chunked.openChunkIfNeeded(in: &outbound) }
        body(&outbound)
        switch machine.streamBodyAppended(buffered: bufferedOutputCount) {
        case .sendNow:
            // A full batch leaves now rather than at the end of the turn: its storage goes back to the
            // loop's spare for the next writer, so a loop turn in which many streams fill a batch each
            // needs one batch of memory, not one per stream. No onWritable from here: the producer is
            // inside its write and simply sees isWritable again if the kernel took everything.
            flush(notifiesWriter: false)
        case .none, .notifyWritable, .notifyShutdown:
            scheduleFlush()
        }
    }

    /// The producer of `writer`'s stream ends it.
    func finishStream(_ writer: BodyWriter) {
        handle(machine.streamFinished(writer, now: SystemEnvironment.monotonicNanoseconds()))
    }

    /// Sends what is buffered (best effort, one `send(2)`) and closes without ending the body.
    func abortStream(_ writer: BodyWriter) {
        guard isOpen(writer) else { return }
        flush(notifiesWriter: false)
        handle(machine.streamAborted(writer))  // nothing if that send already found the peer gone
    }

    /// Carries out the end of a stream its producer finished: the terminator, the producer's `onClose`,
    /// then the next request or the close.
    func endStream(
        _ writer: BodyWriter,
        mode: StreamBodyMode,
        next: ConnectionStateMachine<BodyWriter>.Completion
    ) {
        if mode == .chunked {
            prepareOutbound()
            chunked.finish(in: &outbound)
        }
        markOutputPending()
        writer.streamClosed()
        switch next {
        case .readNextRequest: handle(.readNextRequest)
        case .closeAfterFlush: handle(.closeAfterFlush)
        }
        scheduleFlush()
    }

    // MARK: Flushing

    /// The bytes of output not yet taken by the kernel: the outbound buffer, and on a TLS connection the
    /// ciphertext made and not sent (so a stream's writability reflects what TLS has not sent).
    @inline(__always)
    var bufferedOutputCount: Int {
        if let tls { return outbound.count &+ tls.pendingCount }
        return outbound.count
    }

    /// Makes sure the outbound buffer has storage (the loop's spare when there is one).
    @inline(__always)
    func prepareOutbound() {
        if outbound.storageCapacity == 0, let spare = loop.takeSpareStorage() { outbound.adopt(spare) }
    }

    /// Sizes the buffer for the open stream's next batch in one allocation (see ``AdaptiveWatermark``).
    @inline(__always)
    private func reserveForNextBatch() {
        guard let reserved = machine.stream?.watermark.reservedBytes else { return }
        if outbound.storageCapacity < reserved { outbound.reserveCapacity(reserved) }
    }

    func markOutputPending() {
        if outbound.isEmpty || !awaitsWritable {
            lastWriteProgress = SystemEnvironment.monotonicNanoseconds()
        }
    }

    /// Flushes at the end of the current loop turn, unless the parse loop will flush anyway.
    func scheduleFlush() {
        switch phase {
        case .parsing, .flushScheduled:
            return
        case .resting:
            phase = .flushScheduled
            loop.execute { [self] in
                if case .flushScheduled = phase { phase = .resting }
                flush()
            }
        }
    }

    /// Sends what is queued: one `send(2)`; after a short write the poller watches for room.
    /// - Parameter notifiesWriter: Whether a not-writable → writable edge calls the writer's `onWritable`.
    func flush(notifiesWriter: Bool = true) {
        guard !machine.isClosed else { return }
        defer { if !machine.isClosed { updateInterest() } }
        if chunked.hasOpenChunk { chunked.closeChunk(in: &outbound) }
        let held = holdsNextRequest
        var sent = 0
        if let tls {
            guard let count = sendTLS(tls) else { return }
            sent = count
            if sent > 0 { lastWriteProgress = SystemEnvironment.monotonicNanoseconds() }
        } else if !outbound.isEmpty {
            do {
                switch try Socket.send(fd, outbound.readableBytes) {
                case .processed(let count):
                    sent = count
                case .wouldBlock:
                    break
                }
            } catch {
                handle(machine.mustClose())
                return
            }
            if sent > 0 {
                outbound.consume(sent)
                lastWriteProgress = SystemEnvironment.monotonicNanoseconds()
            }
        }
        let buffered = bufferedOutputCount
        let streamAction = machine.streamFlushed(sent: sent, buffered: buffered) { Socket.unsentByteCount(fd) == 0 }
        if buffered == 0 {
            awaitsWritable = false
            if let storage = outbound.takeStorageIfEmpty() { loop.reclaim(storage) }
            handle(machine.outboundFlushed(now: SystemEnvironment.monotonicNanoseconds))
        } else {
            awaitsWritable = true
            // The kernel refused bytes. A stream whose reader has not proven it reads keeps only what is
            // pending (the next batch, if the reader comes back, reserves the small lagging size again), not
            // the batch sized for a reader keeping up; a proven reader's large storage is kept unless it is
            // mostly empty, as is a fixed response's.
            let tight = machine.stream?.watermark.keepsStorageTight ?? false
            if let storage = outbound.shrink(keepingAtMost: tight ? 1 : 4, minimumCapacity: tight ? 0 : 16 * 1024) {
                loop.reclaim(storage, releasingPages: true)
            }
        }
        if streamAction == .notifyWritable, notifiesWriter, let writer = machine.streamWriter {
            writer.streamBecameWritable()
        }
        // The socket took enough of the answers queued before the next pipelined request: parse it now.
        if held, !holdsNextRequest, machine.isIdle { handle(.readNextRequest) }
        if let tls, tls.inputStalled { resumeStalledInput(tls) }
    }

    // MARK: Readiness

    /// Tells the poller what this socket now waits for, if that changed: bytes while a request is being
    /// read (or while lingering), room while a send is incomplete, and the reader leaving while a stream
    /// is open or an answer pending. Reads pause by dropping `readable` while a response is pending, or while
    /// the answers before the next pipelined request are still mostly unsent.
    func updateInterest() {
        let desired = PollInterest(
            readable: machine.wantsToRead && !holdsNextRequest && !(tls?.inputStalled ?? false),
            writable: awaitsWritable,
            peerHalfClose: machine.isStreaming || abandonHandler != nil
        )
        guard desired != interest else { return }
        interest = desired
        do {
            try loop.updateInterest(fd, desired)
        } catch {
            handle(machine.mustClose())
        }
    }
}
