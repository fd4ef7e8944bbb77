/// The request/response lifecycle of one HTTP/1.1 connection, its deadlines and its open stream, as pure
/// state: events in, actions out.
///
/// It knows nothing of sockets or clocks. ``Connection`` feeds it what happened (bytes arrived, a head was
/// parsed, the handler answered, the peer closed, the loop's timer ticked, with the current monotonic time)
/// and carries out the returned ``Action``. It decides keep-alive versus close, when reads pause and resume,
/// which deadline runs in each state and what missing it means, how a graceful shutdown treats the
/// connection, and when a streamed response opens and closes. While a response streams, its writer and its
/// ``StreamStateMachine`` live in the `streaming` state, so the stream's lifecycle and writability have one
/// owner.
///
/// `Writer` is the handle a stream's producer holds (``BodyWriter``; tests use a stand-in). The machine only
/// compares it by identity and hands it back in actions.
///
/// **Ownership:** Owned by its ``Connection``.
///
/// **Thread safety:** Value type; not shared. The connection calls it only on its loop's queue.
struct ConnectionStateMachine<Writer: AnyObject> {
    /// What the current request asked for, as far as the response is concerned.
    struct RequestContext: Equatable {
        /// Whether the connection may carry another request after this one.
        var keepAlive: Bool
        /// A `HEAD` request: the response has a head and no body.
        var isHead: Bool
        /// An HTTP/1.0 request: no chunked encoding, `Connection: keep-alive` must be explicit.
        var isHTTP1_0: Bool
    }

    /// The reading of one request body: its deadlines and its size against the limit for the request.
    struct BodyRead: Equatable {
        /// When the head was complete (monotonic ns): the whole body must arrive within the body deadline.
        var startedAt: UInt64
        /// When the last body byte arrived (monotonic ns): the body must not stall for the idle timeout.
        var lastByteAt: UInt64
        /// Body bytes received so far.
        var received = 0
        /// The most body bytes this request may have, decided when its first body byte arrives (or at the
        /// head, for a client that waits for `100 Continue`); `nil` until then.
        var limit: Int?
    }

    /// What the connection may accept as a request's body, from ``Server/Configuration/requestBodyLimit``.
    struct BodyAllowance: Equatable {
        /// The most body bytes, after the parser's own limit.
        var limit: Int
        /// The length the request declares (`Content-Length`), if it declares one.
        var declared: Int?
    }

    enum State: Equatable {
        /// Between requests, no byte of the next one seen, since `since`; the idle timeout runs.
        /// Next: `readingHead`, `closingAfterFlush` (shutdown with output pending), `closed`.
        case idle(since: UInt64)
        /// Some bytes of a head have arrived, the first at `since`; the head read timeout runs (slowloris).
        /// Next: `readingBody`, `closingAfterFlush` (bad input, timeout), `closed`.
        case readingHead(since: UInt64)
        /// The head is parsed; the body is being collected under its deadlines and limit.
        /// Next: `awaitingResponse`, `closingAfterFlush`, `closed`.
        case readingBody(RequestContext, BodyRead)
        /// The handler has the request and has not answered yet; reads are paused.
        /// Next: `streaming`, `idle`, `closingAfterFlush`, `closed`.
        case awaitingResponse(RequestContext)
        /// A streamed response written through `Writer` is open; reads are paused. Its phase is the stream
        /// machine's. Next: `idle`, `closingAfterFlush` (it finished), `closed` (aborted, peer gone, write failed).
        case streaming(RequestContext, Writer, StreamStateMachine)
        /// The last response is queued and the connection closes once it is sent. Next: `lingering`, `closed`.
        case closingAfterFlush
        /// Our side is shut since `since`; input is read and discarded until the peer closes or the linger
        /// timer expires, so the kernel does not reset the connection before the peer read our last response.
        /// Next: `closed`.
        case lingering(since: UInt64)
        /// Done; the socket is being torn down. Final.
        case closed

        static func == (lhs: State, rhs: State) -> Bool {
            switch (lhs, rhs) {
            case (.idle(let a), .idle(let b)), (.readingHead(let a), .readingHead(let b)),
                (.lingering(let a), .lingering(let b)):
                return a == b
            case (.readingBody(let a, let x), .readingBody(let b, let y)):
                return a == b && x == y
            case (.awaitingResponse(let a), .awaitingResponse(let b)):
                return a == b
            case (.streaming(let a, let w, let x), .streaming(let b, let v, let y)):
                return a == b && w === v && x == y
            case (.closingAfterFlush, .closingAfterFlush), (.closed, .closed):
                return true
            default:
                return false
            }
        }
    }

    /// What the connection must do after an event.
    enum Action: Equatable {
        /// Nothing.
        case none
        /// Write `HTTP/1.1 100 Continue` now: the client waits for it before sending the body.
        case sendContinue
        /// Hand the completed request to the handler.
        case deliverRequest
        /// The response is complete and the connection stays open: parse buffered bytes, resume reading.
        case readNextRequest
        /// The response is complete; close once it is flushed.
        case closeAfterFlush
        /// Queue an error response with `Connection: close` saying `reason`, then close once it is flushed.
        case sendErrorAndClose(Status, reason: String)
        /// Shut our side and linger.
        case startLingering
        /// Ask the open stream's producer to end (its `onShutdown`).
        case notifyStreamOfShutdown(Writer)
        /// The stream of `writer` ended by its producer: write its terminator if `mode` has one, then go
        /// on as `next` says (``readNextRequest`` or ``closeAfterFlush``); the producer hears it closed.
        case endStream(Writer, mode: StreamBodyMode, next: Completion)
        /// Tear the connection down now; `endingStream`, if any, hears that its stream closed.
        case close(endingStream: Writer?)
        /// Tear the connection down now because its reader took nothing of the queued output for the write-stall
        /// timeout; `endingStream`, if any, hears that its stream closed for that reason.
        case closeStalled(endingStream: Writer?)

        static func == (lhs: Action, rhs: Action) -> Bool {
            switch (lhs, rhs) {
            case (.none, .none), (.sendContinue, .sendContinue), (.deliverRequest, .deliverRequest),
                (.readNextRequest, .readNextRequest), (.closeAfterFlush, .closeAfterFlush),
                (.startLingering, .startLingering):
                return true
            case (.sendErrorAndClose(let a, let x), .sendErrorAndClose(let b, let y)):
                return a == b && x == y
            case (.notifyStreamOfShutdown(let a), .notifyStreamOfShutdown(let b)):
                return a === b
            case (.endStream(let a, let x, let m), .endStream(let b, let y, let n)):
                return a === b && x == y && m == n
            case (.close(let a), .close(let b)), (.closeStalled(let a), .closeStalled(let b)):
                return a === b
            default:
                return false
            }
        }
    }

    /// How a complete response leaves the connection.
    enum Completion: Equatable {
        /// Keep-alive: parse buffered bytes and read the next request.
        case readNextRequest
        /// Close once everything queued is sent.
        case closeAfterFlush
    }

    /// The deadlines, in nanoseconds, that ``deadlinesChecked(now:pendingOutputSince:timeouts:)`` applies.
    struct Timeouts: Equatable {
        /// Idle keep-alive connections, and a request body that stalls (no byte for this long).
        var idle: UInt64
        /// From a head's first byte to its last.
        var headRead: UInt64
        /// From the end of the head to the end of the body, however the bytes trickle.
        var bodyRead: UInt64
        /// Queued output that the kernel takes nothing of.
        var writeStall: UInt64
        /// Reading and discarding after our last response.
        var linger: UInt64
        /// Idle connections of a quiescing server (draining, or a probe-reserve connection): closed gracefully
        /// once idle this long (see ``ConnectionStateMachine/deadlinesChecked(now:pendingOutputSince:timeouts:hasUnreadInput:)``).
        var drainIdle: UInt64

        init(
            idle: UInt64,
            headRead: UInt64,
            bodyRead: UInt64,
            writeStall: UInt64,
            linger: UInt64,
            drainIdle: UInt64 = 1_000_000_000
        ) {
            self.idle = idle
            self.headRead = headRead
            self.bodyRead = bodyRead
            self.writeStall = writeStall
            self.linger = linger
            self.drainIdle = drainIdle
        }

        init(_ configuration: Server.Configuration) {
            self.init(
                idle: configuration.idleTimeout.clampedNanoseconds,
                headRead: configuration.headReadTimeout.clampedNanoseconds,
                bodyRead: configuration.bodyReadTimeout.clampedNanoseconds,
                writeStall: configuration.writeStallTimeout.clampedNanoseconds,
                linger: configuration.lingerTimeout.clampedNanoseconds,
                drainIdle: configuration.drainIdleTimeout.clampedNanoseconds
            )
        }

        /// The shortest of them.
        var shortest: UInt64 { Swift.min(idle, headRead, bodyRead, writeStall, linger) }
    }

    private(set) var state: State
    /// Set once the server begins draining or a graceful shutdown, and on a probe-reserve connection: no
    /// request after the current one (its response says `Connection: close`), and an idle connection closes
    /// gracefully once idle for ``Timeouts/drainIdle``.
    private(set) var isQuiescing = false

    /// A connection just accepted, idle since `now`.
    init(now: UInt64) {
        state = .idle(since: now)
    }

    // MARK: Reading

    /// Whether the parser should be pulled for more request events.
    var isReadingRequest: Bool {
        switch state {
        case .idle, .readingHead, .readingBody:
            return true
        case .awaitingResponse, .streaming, .closingAfterFlush, .lingering, .closed:
            return false
        }
    }

    /// Whether the read source should be running (reading a request, or draining while lingering).
    var wantsToRead: Bool {
        if case .lingering = state { return true }
        return isReadingRequest
    }

    /// Whether input is being read and discarded after our last response.
    var isLingering: Bool {
        if case .lingering = state { return true }
        return false
    }

    /// Whether the connection is between requests, no byte of the next one seen.
    var isIdle: Bool {
        if case .idle = state { return true }
        return false
    }

    /// Whether the connection is closed.
    var isClosed: Bool {
        if case .closed = state { return true }
        return false
    }

    /// Bytes were read from the socket at `now`: a body that trickles is not stalled.
    mutating func bytesRead(now: UInt64) {
        guard case .readingBody(let context, var body) = state else { return }
        body.lastByteAt = now
        state = .readingBody(context, body)
    }

    /// Bytes of a new request are buffered at `now` while idle: its head deadline starts.
    mutating func requestBytesBuffered(now: UInt64) {
        if case .idle = state { state = .readingHead(since: now) }
    }

    /// The parser produced a head at `now`.
    mutating func headReceived(
        isSupportedMethod: Bool,
        method: Method,
        isHead: Bool,
        version: Version,
        keepAlive: Bool,
        expectsContinue: Bool,
        now: UInt64,
        allowance: () -> BodyAllowance
    ) -> Action {
        switch state {
        case .idle, .readingHead:
            guard isSupportedMethod else {
                state = .closingAfterFlush
                return .sendErrorAndClose(.notImplemented, reason: "method \(method.rawValue) is not implemented")
            }
            let isHTTP1_0 = version.major == 1 && version.minor == 0
            let context = RequestContext(keepAlive: keepAlive, isHead: isHead, isHTTP1_0: isHTTP1_0)
            var body = BodyRead(startedAt: now, lastByteAt: now)
            if expectsContinue {
                // The client sends nothing until told to: decide now, and refuse rather than invite a body
                // that is too large.
                let allowed = allowance()
                if let refusal = Self.refusal(of: allowed.declared ?? 0, allowed.limit) {
                    state = .closingAfterFlush
                    return refusal
                }
                body.limit = allowed.limit
            }
            state = .readingBody(context, body)
            return expectsContinue ? .sendContinue : .none
        case .readingBody, .awaitingResponse, .streaming, .closingAfterFlush, .lingering, .closed:
            preconditionFailure("internal inconsistency: head received in \(state)")
        }
    }

    /// `count` body bytes arrived at `now`. On the first, `allowance` says how many the request may have:
    /// a declared length over it is refused before the rest is read, and a received length over it as
    /// soon as it is.
    mutating func bodyReceived(_ count: Int, now: UInt64, allowance: () -> BodyAllowance) -> Action {
        guard case .readingBody(let context, var body) = state else {
            preconditionFailure("internal inconsistency: body received in \(state)")
        }
        body.lastByteAt = now
        body.received &+= count
        let limit: Int
        if let decided = body.limit {
            limit = decided
        } else {
            let allowed = allowance()
            limit = allowed.limit
            body.limit = limit
            if let declared = allowed.declared, let refusal = Self.refusal(of: declared, limit) {
                state = .closingAfterFlush
                return refusal
            }
        }
        if let refusal = Self.refusal(of: body.received, limit) {
            state = .closingAfterFlush
            return refusal
        }
        state = .readingBody(context, body)
        return .none
    }

    private static func refusal(of bytes: Int, _ limit: Int) -> Action? {
        guard bytes > limit else { return nil }
        let reason =
            limit == 0
            ? "this request takes no body, got \(bytes) bytes"
            : "request body of \(bytes) bytes exceeds the limit of \(limit) bytes for this request"
        return .sendErrorAndClose(.payloadTooLarge, reason: reason)
    }

    /// The parser reported the end of the request.
    mutating func requestEnded() -> Action {
        guard case .readingBody(let context, _) = state else {
            preconditionFailure("internal inconsistency: request end in \(state)")
        }
        state = .awaitingResponse(context)
        return .deliverRequest
    }

    /// The connection will serve no request after the current one: every response from now on says
    /// `Connection: close`, and the connection, once idle for ``Timeouts/drainIdle``, closes gracefully
    /// (``deadlinesChecked(now:pendingOutputSince:timeouts:hasUnreadInput:)``).
    mutating func quiesce() {
        isQuiescing = true
    }

    /// The server refuses the request whose head just arrived (a probe-reserve connection asked for another
    /// path): answer `status` and close, without reading the body.
    mutating func requestRefused(_ status: Status, reason: String) -> Action {
        switch state {
        case .idle, .readingHead, .readingBody:
            state = .closingAfterFlush
            return .sendErrorAndClose(status, reason: reason)
        case .awaitingResponse, .streaming, .closingAfterFlush, .lingering, .closed:
            preconditionFailure("internal inconsistency: request refused in \(state)")
        }
    }

    /// The parser rejected the input; `reason` says why.
    mutating func parseFailed(_ status: Status, reason: String) -> Action {
        switch state {
        case .idle, .readingHead, .readingBody:
            state = .closingAfterFlush
            return .sendErrorAndClose(status, reason: reason)
        case .awaitingResponse, .streaming, .closingAfterFlush, .lingering, .closed:
            preconditionFailure("internal inconsistency: parse failure in \(state)")
        }
    }

    // MARK: Responding

    /// The context of the request being answered, if one is awaiting its response.
    var awaitingContext: RequestContext? {
        if case .awaitingResponse(let context) = state { return context }
        return nil
    }

    /// Whether the response about to be written closes the connection.
    func responseCloses(_ context: RequestContext) -> Bool {
        !context.keepAlive || isQuiescing
    }

    /// The handler wrote a complete fixed-length response at `now`.
    mutating func fixedResponseWritten(now: UInt64) -> Action {
        guard case .awaitingResponse(let context) = state else {
            preconditionFailure("internal inconsistency: fixed response in \(state)")
        }
        switch complete(context, now: now) {
        case .readNextRequest: return .readNextRequest
        case .closeAfterFlush: return .closeAfterFlush
        }
    }

    private mutating func complete(_ context: RequestContext, now: UInt64) -> Completion {
        if responseCloses(context) {
            state = .closingAfterFlush
            return .closeAfterFlush
        }
        state = .idle(since: now)
        return .readNextRequest
    }

    /// Everything queued has reached the kernel (`now` is asked only if that starts the linger).
    mutating func outboundFlushed(now: () -> UInt64) -> Action {
        guard case .closingAfterFlush = state else { return .none }
        state = .lingering(since: now())
        return .startLingering
    }

    // MARK: Streaming

    /// The handler started a streamed response written through `writer`; returns whether the response
    /// closes the connection when it ends (HTTP/1.0 streams end by closing).
    mutating func streamStarted(
        writer: Writer,
        mode: StreamBodyMode,
        watermark: AdaptiveWatermark.Settings
    ) -> Bool {
        guard case .awaitingResponse(var context) = state else {
            preconditionFailure("internal inconsistency: stream started in \(state)")
        }
        if context.isHTTP1_0 { context.keepAlive = false }
        state = .streaming(context, writer, StreamStateMachine(mode: mode, watermark: watermark))
        return responseCloses(context)
    }

    /// Whether a stream is open.
    var isStreaming: Bool {
        if case .streaming = state { return true }
        return false
    }

    /// The open stream's machine, if a stream is open.
    var stream: StreamStateMachine? {
        if case .streaming(_, _, let stream) = state { return stream }
        return nil
    }

    /// The open stream's writer, if a stream is open.
    var streamWriter: Writer? {
        if case .streaming(_, let writer, _) = state { return writer }
        return nil
    }

    /// The open stream's machine, if `writer` is its writer.
    @inline(__always)
    func stream(of writer: Writer) -> StreamStateMachine? {
        if case .streaming(_, let open, let stream) = state, open === writer { return stream }
        return nil
    }

    /// Runs `event` on the open stream's machine, if there is one.
    private mutating func updateStream(
        _ event: (inout StreamStateMachine) -> StreamStateMachine.Action
    ) -> StreamStateMachine.Action {
        guard case .streaming(let context, let writer, var stream) = state else { return .none }
        let action = event(&stream)
        state = .streaming(context, writer, stream)
        return action
    }

    /// The producer appended body bytes; `buffered` are now queued.
    mutating func streamBodyAppended(buffered: Int) -> StreamStateMachine.Action {
        guard isStreaming else { return .none }
        return updateStream { $0.bodyAppended(buffered: buffered) }
    }

    /// A send ended while a stream is open (see ``StreamStateMachine/flushed(sent:buffered:readerKeptUp:)``).
    mutating func streamFlushed(
        sent: Int,
        buffered: Int,
        readerKeptUp: () -> Bool
    ) -> StreamStateMachine.Action {
        guard isStreaming else { return .none }
        return updateStream { $0.flushed(sent: sent, buffered: buffered, readerKeptUp: readerKeptUp) }
    }

    /// The producer of `writer`'s stream finished it at `now`: the one transition that closes a stream
    /// normally. `.none` if that stream is not open (finished already, or the connection closed).
    mutating func streamFinished(_ writer: Writer, now: UInt64) -> Action {
        guard case .streaming(let context, let open, let stream) = state, open === writer else { return .none }
        return .endStream(writer, mode: stream.mode, next: complete(context, now: now))
    }

    /// The producer of `writer`'s stream aborted it: the connection closes without the body's end.
    mutating func streamAborted(_ writer: Writer) -> Action {
        guard case .streaming(_, let open, _) = state, open === writer else { return .none }
        state = .closed
        return .close(endingStream: writer)
    }

    // MARK: Ending

    /// The peer closed its side (read returned 0, or a half-close while a stream or answer is pending).
    mutating func peerClosed() -> Action {
        switch state {
        case .closed:
            return .none
        case .closingAfterFlush:
            // Our last response may still be in flight; finish flushing unless the write fails.
            return .none
        case .idle, .readingHead, .readingBody, .awaitingResponse, .streaming, .lingering:
            let writer = streamWriter
            state = .closed
            return .close(endingStream: writer)
        }
    }

    /// A send failed (peer reset, broken pipe) or the connection must go now.
    mutating func mustClose() -> Action {
        if case .closed = state { return .none }
        let writer = streamWriter
        state = .closed
        return .close(endingStream: writer)
    }

    /// The loop's timer ticked at `now`. Applies the deadline of the current state and, when output is
    /// queued (since `pendingOutputSince`, when the kernel last took a byte of it), the write-stall one.
    ///
    /// A quiescing connection idle for ``Timeouts/drainIdle`` closes gracefully: unless `hasUnreadInput` says
    /// bytes of a request already wait to be read (that request is answered, with `Connection: close`), our
    /// side is shut and the connection lingers, so the client reads an orderly end, not a reset. No response
    /// is outstanding then, so a client sees the close before it writes its next request, unless it writes
    /// it in the instant the close is on its way: the race that every close of an idle keep-alive connection
    /// has (RFC 9112 §9.3.1, §9.6), here only after ``Timeouts/drainIdle`` without a request, never for a
    /// client that keeps sending.
    mutating func deadlinesChecked(
        now: UInt64,
        pendingOutputSince: UInt64?,
        timeouts: Timeouts,
        hasUnreadInput: () -> Bool = { false }
    ) -> Action {
        func expired(_ since: UInt64, _ limit: UInt64) -> Bool { now >= since && now &- since >= limit }
        switch state {
        case .idle(let since) where pendingOutputSince == nil && expired(since, timeouts.idle):
            state = .closed
            return .close(endingStream: nil)
        case .idle(let since)
        where isQuiescing && pendingOutputSince == nil && expired(since, timeouts.drainIdle) && !hasUnreadInput():
            state = .lingering(since: now)
            return .startLingering
        case .readingHead(let since) where expired(since, timeouts.headRead):
            state = .closingAfterFlush
            let reason = "request head not received within \(Self.describe(timeouts.headRead))"
            return .sendErrorAndClose(.requestTimeout, reason: reason)
        case .readingBody(_, let body) where expired(body.startedAt, timeouts.bodyRead):
            state = .closingAfterFlush
            let reason =
                "request body not received within \(Self.describe(timeouts.bodyRead)) (\(body.received) bytes arrived)"
            return .sendErrorAndClose(.requestTimeout, reason: reason)
        case .readingBody(_, let body) where expired(body.lastByteAt, timeouts.idle):
            state = .closingAfterFlush
            let reason =
                "request body stalled: no byte for \(Self.describe(timeouts.idle)) (\(body.received) bytes arrived)"
            return .sendErrorAndClose(.requestTimeout, reason: reason)
        case .lingering(let since) where expired(since, timeouts.linger):
            state = .closed
            return .close(endingStream: nil)
        default:
            break
        }
        if let since = pendingOutputSince, expired(since, timeouts.writeStall), case .close(let writer) = mustClose() {
            return .closeStalled(endingStream: writer)
        }
        return .none
    }

    /// `nanoseconds` for a message: whole seconds as `10 s`, anything else in milliseconds.
    static func describe(_ nanoseconds: UInt64) -> String {
        nanoseconds % 1_000_000_000 == 0 ? "\(nanoseconds / 1_000_000_000) s" : "\(nanoseconds / 1_000_000) ms"
    }

    /// The server began a graceful shutdown. `hasPendingOutput`: a response is still queued (an idle
    /// connection whose last answer has not been flushed yet must send it before closing). `hasUnreadInput`:
    /// bytes of a request already wait in the receive buffer; that request is read and answered (with
    /// `Connection: close`) rather than reset by the close.
    mutating func shutdownRequested(hasPendingOutput: Bool, hasUnreadInput: () -> Bool = { false }) -> Action {
        isQuiescing = true
        switch state {
        case .idle where hasPendingOutput:
            state = .closingAfterFlush
            return .closeAfterFlush
        case .idle where hasUnreadInput():
            return .none
        case .idle:
            state = .closed
            return .close(endingStream: nil)
        case .streaming:
            let action = updateStream { $0.shutdownRequested() }
            guard action == .notifyShutdown, let writer = streamWriter else { return .none }
            return .notifyStreamOfShutdown(writer)
        case .readingHead, .readingBody, .awaitingResponse, .closingAfterFlush, .lingering, .closed:
            // In-flight requests finish and then close (isQuiescing turns keep-alive off).
            return .none
        }
    }
}
