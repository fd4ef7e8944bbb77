/// The body of a streaming response: buffered writes, a writability signal, and lifecycle callbacks.
///
/// Writes are appended to the connection's user-space ``OutboundBuffer`` and coalesced: everything
/// written during one loop turn is sent by one `send(2)` at the end of the turn, framed as a single HTTP
/// chunk. ``isWritable`` turns false once the buffer reaches the high watermark and true again when it
/// drains to the low watermark, at which edge ``onWritable`` fires; a producer that writes only while
/// writable holds at most a high watermark of memory (see ``Server/Configuration`` for how the high
/// watermark follows the kernel's free send space).
///
/// Everything here is loop-confined: call it on ``loop`` (hop with `loop.execute { }` from elsewhere).
/// The callbacks are called on the loop too. A write that fills a batch sends it at once, so if that send
/// finds the peer gone, ``onClose`` runs from inside the write.
///
/// **Ownership:** Returned by ``Responder/startStreaming(status:headers:)``; the connection retains it
/// until the stream finishes or the connection closes, the caller for as long as it likes (after the end
/// it is inert). It retains its connection.
///
/// **Thread safety:** Confined to its connection's loop queue (``loop``); entry points check it.
public final class BodyWriter: @unchecked Sendable {  // Mutable state is confined to `loop.queue`.
    /// How body bytes are put on the wire.
    enum Mode {
        /// Framed as HTTP chunks (HTTP/1.1).
        case chunked
        /// As they are; the body ends when the connection closes (HTTP/1.0).
        case raw
        /// Dropped (`HEAD`, or a status that has no body).
        case discard
    }

    /// Whether the stream is open, or ended and how.
    private enum State {
        /// Accepting writes. Next: `finished`, `closed`.
        case open(Connection)
        /// ``finish()`` was called; `onClose` has fired. Final.
        case finished
        /// The connection closed before the end; `onClose` has fired. Final.
        case closed
    }

    /// The loop this writer and its connection belong to. // Immutable.
    public let loop: EventLoop
    let mode: Mode  // Immutable.
    private var state: State  // Loop-confined.

    /// Called on the not-writable → writable edge, on the loop. // Loop-confined.
    public var onWritable: (() -> Void)?

    /// Called exactly once when the stream ends for any reason: the peer went away, the server closed
    /// the connection, or ``finish()`` was called. Set on a writer that has already ended, it is called
    /// at once. // Loop-confined.
    public var onClose: (() -> Void)? {
        get { closeHandler }
        set {
            loop.preconditionInEventLoop()
            if case .open = state {
                closeHandler = newValue
            } else {
                closeHandler = nil
                newValue?()
            }
        }
    }

    /// Called once when the server begins a graceful shutdown: write a final frame and ``finish()``.
    /// If none is set, shutdown finishes the stream itself. // Loop-confined.
    public var onShutdown: (() -> Void)?

    private var closeHandler: (() -> Void)?  // Loop-confined.

    init(connection: Connection, mode: Mode) {
        self.loop = connection.loop
        self.mode = mode
        self.state = .open(connection)
    }

    /// A writer whose connection is already gone (the request was abandoned before the answer).
    init(closedOn loop: EventLoop) {
        self.loop = loop
        self.mode = .discard
        self.state = .closed
    }

    /// Whether the stream is still open (not finished, connection not closed).
    public var isOpen: Bool {
        loop.preconditionInEventLoop()
        if case .open = state { return true }
        return false
    }

    /// Whether the producer should write more. False from the high watermark until the buffer drains
    /// to the low watermark, and once the stream has ended.
    public var isWritable: Bool {
        loop.preconditionInEventLoop()
        guard case .open(let connection) = state else { return false }
        return connection.isWritable
    }

    /// How many more bytes the buffer takes before it reaches the high watermark (0 once ended).
    public var writableBytes: Int {
        loop.preconditionInEventLoop()
        guard case .open(let connection) = state else { return 0 }
        return connection.writableBytes
    }

    /// The bytes of storage the connection's outbound buffer holds and the bytes queued in it (0, 0 once
    /// ended). For tests of what a stream keeps in memory.
    package var outboundStorage: (capacity: Int, queued: Int) {
        loop.preconditionInEventLoop()
        guard case .open(let connection) = state else { return (0, 0) }
        return connection.outboundStorage
    }

    /// Appends bytes to the body. Ignored after the stream ended.
    public func write(_ bytes: UnsafeRawBufferPointer) {
        withAppendBuffer { $0.append(bytes) }
    }

    /// Appends bytes to the body. Ignored after the stream ended.
    public func write(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { write($0) }
    }

    /// Appends the UTF-8 bytes of `string` to the body. Ignored after the stream ended.
    public func write(_ string: String) {
        withAppendBuffer { $0.append(string) }
    }

    /// The fast path: format directly into the outbound buffer, with no intermediate array.
    ///
    /// Everything appended inside `body` becomes part of the current chunk. Do not keep the buffer.
    /// After the stream ended, or for a body that is discarded (`HEAD`), `body` is not called.
    ///
    /// > Warning: `body` has exclusive access to the buffer: do not call this writer (not even
    /// > ``writableBytes``) from inside it; read ``writableBytes`` before and count down.
    public func withAppendBuffer(_ body: (inout OutboundBuffer) -> Void) {
        loop.preconditionInEventLoop()
        guard case .open(let connection) = state, mode != .discard else { return }
        connection.appendBody(chunked: mode == .chunked, body)
    }

    /// Ends the body (the terminating chunk); a keep-alive connection then serves its next request.
    /// `onClose` fires. Calling it again, or after the connection closed, does nothing.
    public func finish() {
        loop.preconditionInEventLoop()
        guard case .open(let connection) = state else { return }
        state = .finished
        connection.finishStream(self)
        fireClose()
    }

    /// Ends the response abnormally: what is buffered goes out if the socket takes it at once, then the
    /// connection closes without the terminating chunk, so the client sees a truncated body rather than a
    /// complete one (for a producer that failed after the head was sent). `onClose` fires. Does nothing
    /// once the stream has ended.
    public func abort() {
        loop.preconditionInEventLoop()
        guard case .open(let connection) = state else { return }
        connection.abortStream()
    }

    // MARK: Connection side

    func becameWritable() {
        onWritable?()
    }

    func connectionClosed() {
        guard case .open = state else { return }
        state = .closed
        fireClose()
    }

    func shutdownRequested() {
        guard case .open = state else { return }
        if let onShutdown {
            self.onShutdown = nil
            onShutdown()
        } else {
            finish()
        }
    }

    private func fireClose() {
        onWritable = nil
        onShutdown = nil
        let handler = closeHandler
        closeHandler = nil
        handler?()
    }
}
