import Foundation
import HTTPServer
import Reactive
import Synchronization

/// How a finished stream went, for the request log and metrics.
public struct StreamSummary: Sendable, Equatable {
    /// Elements written.
    public var events: Int
    /// Body bytes written (including prologue, heartbeats and the final frame).
    public var bytes: Int
    /// Why the stream ended.
    public var end: StreamEnd
}

/// The subscriber that turns a streaming response's writability into demand: the client's read
/// rate becomes the publisher's pace.
///
/// It requests a window of values sized to what the outbound buffer can take, writes each value
/// straight into the buffer, asks for the next window only while the writer stays writable, and
/// otherwise waits for the writer's not-writable → writable edge. A client that stops reading
/// therefore stops the producer with at most one window in flight; one that leaves cancels the
/// subscription, and with it everything upstream.
///
/// Values may arrive on any thread. Those that arrive on the loop, inside the bridge's own
/// `request`, are written at once (the fast path for synchronous producers such as the sequences);
/// all others hop onto the loop in order, and once one has hopped, later ones follow it so that
/// order is kept.
///
/// **Ownership:** retained by the upstream subscription (as its subscriber) and by the writer's
/// callbacks until the stream ends; it then drops both.
///
/// **Thread safety:** the `Subscriber` methods are safe to call from any thread; everything else
/// is confined to the writer's loop.
final class DemandBridge<Encoder: StreamEncoder, Failure: Error>: Subscriber, HeartbeatParticipant,
    CustomStringConvertible, @unchecked Sendable
{
    // @unchecked Sendable: `machine`, `summary` and `heartbeat` are confined to `loop`; `hops` and
    // `requestingThread` are atomics read from any thread.
    typealias Input = Encoder.Element

    /// Limits on the demand windows.
    struct Window: Sendable {
        /// The most values requested at once.
        var maximum = 4096
        /// The guess of bytes per value before any was written.
        var initialBytesPerValue = 32
    }

    private let writer: BodyWriter  // Immutable.
    private let loop: EventLoop  // Immutable.
    private let encoder: Encoder  // Immutable.
    private let window: Window  // Immutable.
    private let failureProblem: @Sendable (Failure) -> Problem  // Immutable.
    private let heartbeats: HeartbeatTicker?  // Immutable.
    private var onEnd: ((StreamSummary) -> Void)?  // Loop-confined.
    private var machine = DemandBridgeStateMachine()  // Loop-confined.
    private var events = 0  // Loop-confined.
    private var bytes = 0  // Loop-confined.
    private var eventsAtLastHeartbeatCheck = 0  // Loop-confined.
    private var idleTicks = 0  // Loop-confined.

    /// Deliveries and completions waiting in the loop's queue; while any wait, new ones queue too.
    private let hops = Atomic<Int>(0)
    /// The thread running the bridge's own `request` call on the loop, or 0.
    private let requestingThread = Atomic<UInt>(0)

    /// - Parameters:
    ///   - writer: The streaming response to write into; its callbacks are taken over.
    ///   - encoder: The framing of the response's format.
    ///   - heartbeats: The loop's ticker, for keep-alives while the stream is idle.
    ///   - failureProblem: Turns a publisher failure into the problem written in the failure frame.
    ///   - onEnd: Called once on the loop when the stream has ended, however it ended.
    init(
        writer: BodyWriter,
        encoder: Encoder,
        window: Window = Window(),
        heartbeats: HeartbeatTicker? = nil,
        failureProblem: @escaping @Sendable (Failure) -> Problem,
        onEnd: @escaping (StreamSummary) -> Void
    ) {
        writer.loop.preconditionInEventLoop()
        self.writer = writer
        self.loop = writer.loop
        self.encoder = encoder
        self.window = window
        self.failureProblem = failureProblem
        self.heartbeats = heartbeats
        self.onEnd = onEnd
        // Strong on purpose: the writer drops its callbacks when the stream ends, which breaks the cycle.
        writer.onWritable = { self.writerBecameWritable() }
        writer.onClose = { self.writerClosed() }
        writer.onShutdown = { self.shutdownRequested() }
        write { encoder.appendPrologue(to: &$0) }
        heartbeats?.add(self)
    }

    var description: String { "DemandBridge" }

    /// A bridge for a publisher that cannot fail.
    convenience init(
        writer: BodyWriter,
        encoder: Encoder,
        window: Window = Window(),
        heartbeats: HeartbeatTicker? = nil,
        onEnd: @escaping (StreamSummary) -> Void
    ) where Failure == Never {
        self.init(
            writer: writer,
            encoder: encoder,
            window: window,
            heartbeats: heartbeats,
            failureProblem: absurd,
            onEnd: onEnd
        )
    }

    // MARK: Subscriber

    func receive(subscription: any Subscription) {
        if isOnLoopInOrder {
            subscribed(subscription)
        } else {
            hop { $0.subscribed(subscription) }
        }
    }

    func receive(_ input: Input) -> Subscribers.Demand {
        if isInsideOwnRequest && hops.load(ordering: .relaxed) == 0 {
            // Inside our own request: the next window goes back as this call's demand, not a nested request.
            if case .request(_, let window) = written(input) { return .max(window) }
            return .none
        }
        hop { bridge in
            bridge.perform(bridge.written(input))
        }
        return .none
    }

    func receive(completion: Subscribers.Completion<Failure>) {
        if isOnLoopInOrder {
            completed(completion)
        } else {
            hop { $0.completed(completion) }
        }
    }

    // MARK: Loop side

    /// The values to ask for now: as many as fit below the high watermark at the average size so far.
    private var nextWindow: Int {
        guard writer.isWritable else { return 0 }
        let perValue = events > 0 ? max(1, bytes / events) : window.initialBytesPerValue
        return min(window.maximum, max(1, writer.writableBytes / perValue))
    }

    private func subscribed(_ subscription: any Subscription) {
        perform(machine.subscribed(subscription, window: nextWindow))
    }

    /// Writes one value; returns `.request` when the next window is due.
    @inline(__always)
    private func written(_ input: Input) -> DemandBridgeStateMachine.Action {
        guard machine.acceptsValues else { return .none }
        write { encoder.append(input, to: &$0) }
        events &+= 1
        return machine.valueWritten(nextWindow: nextWindow)
    }

    private func completed(_ completion: Subscribers.Completion<Failure>) {
        switch completion {
        case .finished: perform(machine.finished())
        case .failure(let error): perform(machine.failed(failureProblem(error)))
        }
    }

    private func writerBecameWritable() {
        perform(machine.becameWritable(window: nextWindow))
    }

    private func writerClosed() {
        perform(machine.clientGone())
        finish()
    }

    private func shutdownRequested() {
        perform(machine.shutdownRequested())
    }

    /// Called by the loop's heartbeat ticker; writes a heartbeat after `ticksPerHeartbeat` idle ticks.
    func heartbeatTick(ticksPerHeartbeat: Int) {
        guard !machine.hasEnded else { return }
        if events != eventsAtLastHeartbeatCheck {
            eventsAtLastHeartbeatCheck = events
            idleTicks = 0
            return
        }
        idleTicks += 1
        if idleTicks >= ticksPerHeartbeat {
            idleTicks = 0
            write { encoder.appendHeartbeat(to: &$0) }
        }
    }

    private func perform(_ action: DemandBridgeStateMachine.Action) {
        switch action {
        case .none:
            break
        case .request(let subscription, let count):
            request(count, from: subscription)
        case .cancel(let subscription):
            subscription.cancel()
        case .end(let reason, let subscription):
            subscription?.cancel()
            write { encoder.appendEnd(reason, to: &$0) }
            finish()
        case .fail(let problem):
            write { encoder.appendFailure(problem, to: &$0) }
            finish()
        }
    }

    /// Requests `count` values, marking this thread so that values delivered inside take the fast path.
    private func request(_ count: Int, from subscription: any Subscription) {
        let thread = UInt(bitPattern: Int(bitPattern: pthread_self()))
        let previous = requestingThread.exchange(thread, ordering: .relaxed)
        subscription.request(.max(count))
        requestingThread.store(previous, ordering: .relaxed)
    }

    private func write(_ body: (inout OutboundBuffer) -> Void) {
        writer.withAppendBuffer { buffer in
            let before = buffer.count
            body(&buffer)
            bytes &+= buffer.count &- before
        }
    }

    /// Reports the summary once, then ends the response if it is still open.
    private func finish() {
        if let onEnd, let reason = machine.endReason {
            self.onEnd = nil
            heartbeats?.remove(self)
            onEnd(StreamSummary(events: events, bytes: bytes, end: reason))
        }
        writer.finish()
    }

    // MARK: Threads

    /// Whether the caller is inside the bridge's own `request`, on the loop.
    @inline(__always)
    private var isInsideOwnRequest: Bool {
        requestingThread.load(ordering: .relaxed) == UInt(bitPattern: Int(bitPattern: pthread_self()))
    }

    /// Whether an event may be handled right here: on the loop with nothing queued before it.
    private var isOnLoopInOrder: Bool {
        hops.load(ordering: .relaxed) == 0 && (isInsideOwnRequest || loop.inEventLoop)
    }

    private func hop(_ work: @escaping (DemandBridge) -> Void) {
        hops.wrappingAdd(1, ordering: .relaxed)
        let box = UncheckedSendableBox(work)
        loop.execute { [self] in
            box.value(self)
            hops.wrappingSubtract(1, ordering: .relaxed)
        }
    }
}

/// The problem for a failure that cannot happen.
private func absurd(_ never: Never) -> Problem {}

/// Carries a non-`Sendable` value onto a loop queue.
///
/// Sound where used: the value is created on one thread, handed to exactly one queued block and
/// used only inside it, with the queue's own ordering as the hand-off.
struct UncheckedSendableBox<Value>: @unchecked Sendable {
    let value: Value

    init(_ value: Value) {
        self.value = value
    }
}
