/// The lifecycle and writability of one open streaming response, as pure state: events in, actions out.
///
/// A stream is open from ``Responder/startStreaming(status:headers:)`` until it closes, and while open it is
/// in one of three phases:
///
///     writable ⇄ notWritable      (the buffer reached the high watermark / drained to the low one)
///         ╰──────────┴──→ finishing  (graceful shutdown asked the producer for its last frame)
///
/// It closes in one transition of the connection's machine (``ConnectionStateMachine``), which holds this one
/// in its `streaming` state beside the stream's writer: the producer finished or aborted, or the client left,
/// or the server closed the connection. Closed, the machine is gone, so "is the stream open" has exactly one
/// answer: whether the connection's state holds a stream for that writer. ``BodyWriter`` asks; nothing
/// mirrors it.
///
/// **Ownership:** Held by the `streaming` state of its connection's ``ConnectionStateMachine``.
///
/// **Thread safety:** Value type; not shared. Used only on its connection's loop.
struct StreamStateMachine: Equatable {
    /// Where an open stream is. See the type's discussion for the transitions.
    enum Phase: Equatable {
        /// The producer should write: below the high watermark, or back at the low one since.
        /// Next: `notWritable`, `finishing`.
        case writable
        /// The buffer reached the high watermark; the producer waits for the writable edge.
        /// Next: `writable`, `finishing`.
        case notWritable
        /// The server is shutting down and asked the producer to end: writes still go out (a last frame),
        /// and the producer should finish. Next: none (the stream closes).
        case finishing
    }

    /// What the connection does after an event.
    enum Action: Equatable {
        /// Nothing.
        case none
        /// Send the buffer now rather than at the end of the loop turn: a full batch leaves at once, so its
        /// storage can serve the next writer.
        case sendNow
        /// Tell the producer it may write again (the not-writable → writable edge).
        case notifyWritable
        /// Ask the producer to write its last frame and finish (graceful shutdown).
        case notifyShutdown
    }

    /// How the body is put on the wire. // Immutable.
    let mode: StreamBodyMode
    private(set) var phase: Phase = .writable
    private(set) var watermark: AdaptiveWatermark

    init(mode: StreamBodyMode, watermark: AdaptiveWatermark.Settings) {
        self.mode = mode
        self.watermark = AdaptiveWatermark(starting: watermark)
    }

    /// Whether the producer should write more.
    var isWritable: Bool { phase == .writable }

    /// How many more bytes the producer may write before the high watermark, with `buffered` bytes queued.
    func writableBytes(buffered: Int) -> Int {
        phase == .writable ? max(0, watermark.highBytes &- buffered) : 0
    }

    /// The producer appended body bytes; `buffered` are now queued.
    mutating func bodyAppended(buffered: Int) -> Action {
        guard buffered >= watermark.highBytes else { return .none }
        if phase == .writable { phase = .notWritable }
        return .sendNow
    }

    /// A send ended: the kernel took `sent` bytes and `buffered` remain queued. `readerKeptUp` tells whether
    /// nothing was left behind in the kernel either (asked only when it matters).
    mutating func flushed(sent: Int, buffered: Int, readerKeptUp: () -> Bool) -> Action {
        watermark.taken(sent)
        watermark.flushed(sent: sent, buffered: buffered, readerKeptUp: readerKeptUp)
        switch phase {
        case .writable:
            // The high watermark may have dropped below what is queued.
            if buffered >= watermark.highBytes { phase = .notWritable }
            return .none
        case .notWritable:
            guard buffered <= watermark.lowBytes else { return .none }
            phase = .writable
            return .notifyWritable
        case .finishing:
            return .none
        }
    }

    /// The server began a graceful shutdown.
    mutating func shutdownRequested() -> Action {
        switch phase {
        case .writable, .notWritable:
            phase = .finishing
            return .notifyShutdown
        case .finishing:
            return .none
        }
    }
}
