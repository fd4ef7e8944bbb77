import EventLoops
import HTTPServer

/// What the demand bridge needs of a streaming response: ``BodyWriter``, which the service uses, or a
/// stand-in in the bridge's unit tests.
///
/// The writer owns the stream's state (open, writable, the watermarks); the bridge only asks it. The
/// contract is ``BodyWriter``'s: everything on ``loop``; `onClose` fires once, for any end, `finish()`
/// included; `onWritable` on the not-writable → writable edge; `onShutdown` when the server asks the
/// stream to end.
///
/// **Thread safety:** Confined to ``loop``.
protocol StreamWriter: AnyObject {
    /// The loop the stream and its callbacks run on.
    var loop: EventLoop { get }
    /// Whether the producer should write more.
    var isWritable: Bool { get }
    /// How many more bytes the buffer takes before the high watermark.
    var writableBytes: Int { get }
    /// Lends the outbound buffer for appending body bytes (not called once the stream ended).
    func withAppendBuffer(_ body: (inout OutboundBuffer) -> Void)
    /// Ends the body.
    func finish()
    /// Called on the not-writable → writable edge.
    var onWritable: (() -> Void)? { get set }
    /// Called once when the stream ends for any reason.
    var onClose: (() -> Void)? { get set }
    /// Called when the server asks the stream to end.
    var onShutdown: (() -> Void)? { get set }
    /// Whether the stream ended because the server cut a reader that read nothing for the write-stall timeout.
    var endedByWriteStall: Bool { get }
}

extension BodyWriter: StreamWriter {}
