import EventLoops
/// The producer's handle on a streaming response: buffered writes, a writability signal, and callbacks.
///
/// The stream's state — open or closed, writable or not, finishing on shutdown — is held once, by the
/// connection's state machine (``StreamStateMachine`` inside ``ConnectionStateMachine``); the writer asks it
/// and keeps no copy. Writes are appended to the connection's user-space ``OutboundBuffer`` and coalesced:
/// everything written during one loop turn is sent by one `send(2)` at the end of the turn, framed as a
/// single HTTP chunk. ``isWritable`` turns false once the buffer reaches the high watermark and true again
/// when it drains to the low watermark, at which edge ``onWritable`` fires; a producer that writes only
/// while writable holds at most a high watermark of memory (see ``Server/Configuration`` for how the high
/// watermark follows the kernel's free send space).
///
/// Everything here is loop-confined: call it on ``loop`` (hop with `loop.execute { }` from elsewhere).
/// The callbacks are called on the loop too. A write that fills a batch sends it at once, so if that send
/// finds the peer gone, ``onClose`` runs from inside the write.
///
/// **Ownership:** Returned by ``Responder/startStreaming(status:headers:)``; the connection's state holds it
/// while the stream is open, the caller for as long as it likes (after the end it is inert). It retains its
/// connection.
///
/// **Thread safety:** Confined to its connection's loop queue (``loop``); entry points check it.
public final class BodyWriter: @unchecked Sendable {  // Mutable state is confined to `loop.queue`.
    /// The loop this writer and its connection belong to. // Immutable.
    public let loop: EventLoop
    let connection: Connection  // Immutable.

    /// Called on the not-writable → writable edge, on the loop. // Loop-confined.
    public var onWritable: (() -> Void)?

    /// Called exactly once when the stream ends for any reason: ``finish()``, ``abort()``, the peer going
    /// away, or the server closing the connection. Set on a writer that has already ended, it is called at
    /// once. A producer that ends the stream itself and does not want to hear of it sets it to `nil` first.
    /// // Loop-confined.
    public var onClose: (() -> Void)? {
        get { closeHandler }
        set {
            loop.preconditionInEventLoop()
            if isOpen {
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

    /// Whether the stream ended because its reader took nothing of the queued bytes for
    /// ``Server/Configuration/writeStallTimeout`` (the server cut it), rather than the reader leaving or the
    /// producer ending it. Set before ``onClose`` runs. // Loop-confined.
    public private(set) var endedByWriteStall = false

    init(connection: Connection) {
        self.loop = connection.loop
        self.connection = connection
    }

    /// Whether the stream is still open (not finished, connection not closed).
    public var isOpen: Bool {
        loop.preconditionInEventLoop()
        return connection.isOpen(self)
    }

    /// Whether the producer should write more. False from the high watermark until the buffer drains
    /// to the low watermark, while the server asks the stream to finish, and once the stream has ended.
    public var isWritable: Bool {
        loop.preconditionInEventLoop()
        return connection.isWritable(self)
    }

    /// How many more bytes the buffer takes before it reaches the high watermark (0 unless writable).
    public var writableBytes: Int {
        loop.preconditionInEventLoop()
        return connection.writableBytes(self)
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
        connection.appendBody(from: self, body)
    }

    /// Ends the body (the terminating chunk); a keep-alive connection then serves its next request.
    /// `onClose` fires. Calling it again, or after the connection closed, does nothing.
    public func finish() {
        loop.preconditionInEventLoop()
        connection.finishStream(self)
    }

    /// Ends the response abnormally: what is buffered goes out if the socket takes it at once, then the
    /// connection closes without the terminating chunk, so the client sees a truncated body rather than a
    /// complete one (for a producer that failed after the head was sent). `onClose` fires. Does nothing
    /// once the stream has ended.
    public func abort() {
        loop.preconditionInEventLoop()
        connection.abortStream(self)
    }

    // MARK: Connection side (the stream machine's actions)

    /// The not-writable → writable edge.
    func streamBecameWritable() {
        onWritable?()
    }

    /// The server asks the stream to end.
    func shutdownRequested() {
        if let onShutdown {
            self.onShutdown = nil
            onShutdown()
        } else {
            finish()
        }
    }

    /// The server cuts the stream because its reader stalled; ``streamClosed()`` follows.
    func writeStalled() {
        endedByWriteStall = true
    }

    /// The stream closed (finished, aborted, peer gone, connection closed): the callbacks are dropped and
    /// `onClose` runs, once.
    func streamClosed() {
        onWritable = nil
        onShutdown = nil
        let handler = closeHandler
        closeHandler = nil
        handler?()
    }
}
