/// The request/response lifecycle of one HTTP/1.1 connection, as pure state: events in, actions out.
///
/// It knows nothing of sockets or clocks. ``Connection`` feeds it what happened (a head was parsed, the
/// handler finished its response, the peer closed, a timer expired) and carries out the returned
/// ``Action``. It decides keep-alive versus close, when reads pause and resume, what a timeout means in
/// each state, and how a graceful shutdown treats the connection.
///
/// **Ownership:** Owned by its ``Connection``.
///
/// **Thread safety:** Value type; not shared. The connection calls it only on its loop's queue.
struct ConnectionStateMachine {
    /// What the current request asked for, as far as the response is concerned.
    struct RequestContext: Equatable {
        /// Whether the connection may carry another request after this one.
        var keepAlive: Bool
        /// A `HEAD` request: the response has a head and no body.
        var isHead: Bool
        /// An HTTP/1.0 request: no chunked encoding, `Connection: keep-alive` must be explicit.
        var isHTTP1_0: Bool
    }

    enum State: Equatable {
        /// Between requests, no byte of the next one seen; the idle timeout runs.
        /// Next: `readingHead`, `closed`.
        case idle
        /// Some bytes of a head have arrived; the head read timeout runs (slowloris).
        /// Next: `readingBody`, `closingAfterFlush` (bad input, timeout), `closed`.
        case readingHead
        /// The head is parsed; the body is being collected. Next: `awaitingResponse`, `closingAfterFlush`, `closed`.
        case readingBody(RequestContext)
        /// The handler has the request and has not finished its response; reads are paused.
        /// Next: `streaming`, `idle`, `closingAfterFlush`, `closed`.
        case awaitingResponse(RequestContext)
        /// A streaming response is being written; reads are paused. Next: `idle`, `closingAfterFlush`, `closed`.
        case streaming(RequestContext)
        /// The last response is queued and the connection closes once it is sent. Next: `lingering`, `closed`.
        case closingAfterFlush
        /// Our side is shut; input is read and discarded until the peer closes or the linger timer
        /// expires, so the kernel does not reset the connection before the peer read our last response.
        /// Next: `closed`.
        case lingering
        /// Done; the socket is being torn down. Final.
        case closed
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
        /// Queue an error response with `Connection: close`, then close once it is flushed.
        case sendErrorAndClose(Status)
        /// Shut our side and linger.
        case startLingering
        /// Ask the streaming response to end (its `onShutdown`).
        case notifyStreamOfShutdown
        /// Tear the connection down now.
        case close
    }

    /// Which timeout applies in the current state.
    enum TimerKind: Equatable {
        case none
        case idle
        case headRead
        case bodyRead
        case linger
    }

    private(set) var state: State = .idle
    /// Set once the server begins a graceful shutdown: no request after the current one.
    private(set) var isQuiescing = false

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
        isReadingRequest || state == .lingering
    }

    var timerKind: TimerKind {
        switch state {
        case .idle: return .idle
        case .readingHead: return .headRead
        case .readingBody: return .bodyRead
        case .lingering: return .linger
        case .awaitingResponse, .streaming, .closingAfterFlush, .closed: return .none
        }
    }

    /// Bytes of a new request arrived (or are buffered) while idle.
    mutating func requestBytesReceived() {
        if state == .idle { state = .readingHead }
    }

    /// The parser produced a head.
    mutating func headReceived(
        isSupportedMethod: Bool,
        isHead: Bool,
        version: Version,
        keepAlive: Bool,
        expectsContinue: Bool
    ) -> Action {
        switch state {
        case .idle, .readingHead:
            guard isSupportedMethod else {
                state = .closingAfterFlush
                return .sendErrorAndClose(.notImplemented)
            }
            let isHTTP1_0 = version.major == 1 && version.minor == 0
            state = .readingBody(RequestContext(keepAlive: keepAlive, isHead: isHead, isHTTP1_0: isHTTP1_0))
            return expectsContinue ? .sendContinue : .none
        case .readingBody, .awaitingResponse, .streaming, .closingAfterFlush, .lingering, .closed:
            preconditionFailure("internal inconsistency: head received in \(state)")
        }
    }

    /// The parser reported the end of the request.
    mutating func requestEnded() -> Action {
        guard case .readingBody(let context) = state else {
            preconditionFailure("internal inconsistency: request end in \(state)")
        }
        state = .awaitingResponse(context)
        return .deliverRequest
    }

    /// The parser rejected the input.
    mutating func parseFailed(_ status: Status) -> Action {
        switch state {
        case .idle, .readingHead, .readingBody:
            state = .closingAfterFlush
            return .sendErrorAndClose(status)
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

    /// The context of the response being streamed, if any.
    var streamingContext: RequestContext? {
        if case .streaming(let context) = state { return context }
        return nil
    }

    /// Whether the response about to be written closes the connection.
    func responseCloses(_ context: RequestContext) -> Bool {
        !context.keepAlive || isQuiescing
    }

    /// The handler wrote a complete fixed-length response.
    mutating func fixedResponseWritten() -> Action {
        guard case .awaitingResponse(let context) = state else {
            preconditionFailure("internal inconsistency: fixed response in \(state)")
        }
        return complete(context)
    }

    /// The handler started a streaming response. HTTP/1.0 streams end by closing.
    mutating func streamStarted() {
        guard case .awaitingResponse(var context) = state else {
            preconditionFailure("internal inconsistency: stream started in \(state)")
        }
        if context.isHTTP1_0 { context.keepAlive = false }
        state = .streaming(context)
    }

    /// The streaming response wrote its end.
    mutating func streamFinished() -> Action {
        guard case .streaming(let context) = state else {
            preconditionFailure("internal inconsistency: stream finished in \(state)")
        }
        return complete(context)
    }

    private mutating func complete(_ context: RequestContext) -> Action {
        if responseCloses(context) {
            state = .closingAfterFlush
            return .closeAfterFlush
        }
        state = .idle
        return .readNextRequest
    }

    /// Everything queued has reached the kernel.
    mutating func outboundFlushed() -> Action {
        guard state == .closingAfterFlush else { return .none }
        state = .lingering
        return .startLingering
    }

    // MARK: Ending

    /// The peer closed its side (read returned 0).
    mutating func peerClosed() -> Action {
        switch state {
        case .closed:
            return .none
        case .closingAfterFlush:
            // Our last response may still be in flight; finish flushing unless the write fails.
            return .none
        case .idle, .readingHead, .readingBody, .awaitingResponse, .streaming, .lingering:
            state = .closed
            return .close
        }
    }

    /// A send failed (peer reset, broken pipe) or the connection must go now.
    mutating func mustClose() -> Action {
        guard state != .closed else { return .none }
        state = .closed
        return .close
    }

    /// The timer for ``timerKind`` expired.
    mutating func timedOut() -> Action {
        switch state {
        case .readingHead, .readingBody:
            state = .closingAfterFlush
            return .sendErrorAndClose(.requestTimeout)
        case .idle, .lingering:
            state = .closed
            return .close
        case .awaitingResponse, .streaming, .closingAfterFlush, .closed:
            return .none
        }
    }

    /// The server began a graceful shutdown.
    mutating func shutdownRequested() -> Action {
        isQuiescing = true
        switch state {
        case .idle:
            state = .closed
            return .close
        case .streaming:
            return .notifyStreamOfShutdown
        case .readingHead, .readingBody, .awaitingResponse, .closingAfterFlush, .lingering, .closed:
            // In-flight requests finish and then close (isQuiescing turns keep-alive off).
            return .none
        }
    }
}
