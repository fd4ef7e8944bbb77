import Dispatch
import EventLoops
import HTTPServer
import Reactive
import Synchronization
import TestSupport

@testable import Spout

/// A stand-in for ``BodyWriter`` with its contract (see ``StreamWriter``): a real ``OutboundBuffer`` and a
/// high watermark the test sets, with the buffer "sent" only when the test says so.
///
/// **Thread safety:** confined to ``loop``, like the writer it stands in for.
final class FakeStreamWriter: StreamWriter, @unchecked Sendable {  // Confined to `loop`.
    let loop: EventLoop
    private var buffer = OutboundBuffer()
    private(set) var isOpen = true
    /// Reached the high watermark; writable again at ``drain()``.
    private var isFull = false
    /// Buffered bytes at which the writer stops being writable.
    var highWatermark: Int
    /// Bytes the test took out with ``drain()``, in order.
    private(set) var sent: [UInt8] = []
    /// How often the buffer was lent (``withAppendBuffer(_:)`` calls that ran their body).
    private(set) var lendings = 0
    private(set) var finishes = 0
    /// When set, the next lending ends with the client gone, as a flush that finds the peer gone does.
    var closesAfterNextLending = false

    var onWritable: (() -> Void)?
    var onShutdown: (() -> Void)?
    /// Set by a test before the writer closes, as the server's cut of a stalled reader does.
    var endedByWriteStall = false
    private var closeHandler: (() -> Void)?
    var onClose: (() -> Void)? {
        get { closeHandler }
        set {
            if isOpen {
                closeHandler = newValue
            } else {
                closeHandler = nil
                newValue?()
            }
        }
    }

    init(loop: EventLoop, highWatermark: Int = 1 << 30) {
        self.loop = loop
        self.highWatermark = highWatermark
    }

    var isWritable: Bool { isOpen && !isFull }

    var writableBytes: Int { isWritable ? max(0, highWatermark - buffer.count) : 0 }

    func withAppendBuffer(_ body: (inout OutboundBuffer) -> Void) {
        loop.preconditionInEventLoop()
        guard isOpen else { return }
        lendings += 1
        body(&buffer)
        if buffer.count >= highWatermark { isFull = true }
        if closesAfterNextLending {
            closesAfterNextLending = false
            clientLeaves()
        }
    }

    func finish() {
        loop.preconditionInEventLoop()
        guard isOpen else { return }
        finishes += 1
        isOpen = false
        closed()
    }

    // MARK: The test's side

    /// Everything written so far, sent or buffered.
    var text: String {
        String(decoding: sent + Array(buffer.readableBytes), as: UTF8.self)
    }

    /// Bytes written and not yet drained.
    var buffered: Int { buffer.count }

    /// The kernel took everything: the writable edge, if the writer was full.
    func drain() {
        sent += Array(buffer.readableBytes)
        buffer.consume(buffer.count)
        if isFull && isOpen {
            isFull = false
            onWritable?()
        }
    }

    /// The client went away.
    func clientLeaves() {
        guard isOpen else { return }
        isOpen = false
        closed()
    }

    /// The server asks the stream to end.
    func requestShutdown() {
        if let handler = onShutdown {
            onShutdown = nil
            handler()
        } else {
            finish()
        }
    }

    private func closed() {
        onWritable = nil
        onShutdown = nil
        let handler = closeHandler
        closeHandler = nil
        handler?()
    }
}

/// Integers as lines, with frames a test can read: `P` prologue, `end:<reason>`, `error:<detail>`, `H`.
struct LineEncoder: StreamEncoder {
    func appendPrologue(to buffer: inout OutboundBuffer) { buffer.append("P\n") }

    func append(_ element: Int, to buffer: inout OutboundBuffer) {
        buffer.appendDecimal(element)
        buffer.append(UInt8(ascii: "\n"))
    }

    func appendEnd(_ reason: StreamEnd, to buffer: inout OutboundBuffer) { buffer.append("end:\(reason.rawValue)\n") }

    func appendFailure(_ problem: Problem, to buffer: inout OutboundBuffer) {
        buffer.append("error:\(problem.detail)\n")
    }

    func appendHeartbeat(to buffer: inout OutboundBuffer) { buffer.append("H\n") }
}

/// A subscription whose `request` and `cancel` run what the test scripts, and that records them: the
/// windows asked for, the cancels, and how deeply `request` was re-entered.
///
/// **Thread safety:** its counters are guarded by a mutex; the scripts run on the caller's thread.
final class ScriptedSubscription: Subscription, @unchecked Sendable {  // Counters guarded by `record`.
    private struct Record {
        var requests: [Int] = []
        var cancels = 0
        var depth = 0
        var maximumDepth = 0
    }

    private let record = LockedState(Record())
    /// Runs inside `request(_:)` with the window; set before the subscription is handed over. // Immutable after.
    var onRequest: (Int) -> Void = { _ in }
    /// Runs inside `cancel()`. // Immutable after the hand-over.
    var onCancel: () -> Void = {}

    var requests: [Int] { record.withLock { $0.requests } }
    var cancels: Int { record.withLock { $0.cancels } }
    /// The deepest nesting of `request` calls seen (1: never re-entered).
    var maximumDepth: Int { record.withLock { $0.maximumDepth } }

    func request(_ demand: Subscribers.Demand) {
        let window = demand.max ?? .max
        record.withLock {
            $0.requests.append(window)
            $0.depth += 1
            $0.maximumDepth = max($0.maximumDepth, $0.depth)
        }
        onRequest(window)
        record.withLock { $0.depth -= 1 }
    }

    func cancel() {
        record.withLock { $0.cancels += 1 }
        onCancel()
    }
}

/// The summaries a bridge reported.
final class SummaryLog: Sendable {
    private let summaries = LockedState<[StreamSummary]>([])

    var all: [StreamSummary] { summaries.withLock { $0 } }

    func record(_ summary: StreamSummary) {
        summaries.withLock { $0.append(summary) }
    }
}
