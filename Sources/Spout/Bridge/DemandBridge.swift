import Foundation
import HTTPServer
import Reactive
import Sequences
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
/// `request`, are written at once (the fast path for synchronous producers such as the sequences):
/// each request runs inside one append session on the outbound buffer, so a window of values costs
/// one buffer hand-over and one flush check, not one per value. All other values hop onto the loop in
/// order, and once one has hopped, later ones follow it so that order is kept. A producer that keeps
/// up with a fast reader yields the loop after ``bytesPerTurn`` so other connections are served.
///
/// **Ownership:** retained by the upstream subscription (as its subscriber) and by the writer's
/// callbacks until the stream ends; it then drops both.
///
/// **Thread safety:** the `Subscriber` methods are safe to call from any thread; everything else
/// is confined to the writer's loop.
final class DemandBridge<Encoder: StreamEncoder, Failure: Error>: Subscriber, HeartbeatParticipant,
    CustomStringConvertible, @unchecked Sendable
{
    // @unchecked Sendable: `state` (and what it points to) is confined to `loop`; `hops` and
    // `requestingThread` are atomics read from any thread.
    typealias Input = Encoder.Element

    /// Limits on the demand windows.
    struct Window: Sendable {
        /// The most values requested at once.
        var maximum = 8192
        /// The guess of bytes per value before any was written.
        var initialBytesPerValue = 32
    }

    private let writer: BodyWriter  // Immutable.
    private let loop: EventLoop  // Immutable.
    private let encoder: Encoder  // Immutable.
    /// `encoder.append`, made in `init`, where the encoder's type is known: the per-value call from a
    /// producer compiled without knowing it (another module's generic code) then lands in specialized
    /// code instead of going through witness tables. // Immutable.
    private let appendValue: (Input, UnsafeMutablePointer<OutboundBuffer>) -> Void
    /// `encoder.append` over several values, made in `init` like `appendValue`: the loop over a batch
    /// runs in specialized code, with the encoder inlined. // Immutable.
    private let appendValues: (UnsafeBufferPointer<Input>, UnsafeMutablePointer<OutboundBuffer>) -> Void
    private let window: Window  // Immutable.
    private let failureProblem: @Sendable (Failure) -> Problem  // Immutable.
    private let heartbeats: HeartbeatTicker?  // Immutable.
    private var onEnd: ((StreamSummary) -> Void)?  // Loop-confined.
    /// The per-value state, in heap storage of its own: reached through a pointer, it costs no dynamic
    /// exclusivity check per access (a class's stored `var`s do). // Loop-confined.
    private let state: UnsafeMutablePointer<State>

    /// What the bridge tracks per value and per window.
    private struct State {
        var machine = DemandBridgeStateMachine()
        var events = 0
        var bytes = 0
        var eventsAtLastHeartbeatCheck = 0
        var idleTicks = 0
        /// The outbound buffer lent for the current request's append session, while one is open.
        var session: UnsafeMutablePointer<OutboundBuffer>?
        /// Values written in the current session.
        var sessionValues = 0
        /// Whether the stream ended inside the session: the response is finished once it closes.
        var finishAfterSession = false
        /// Whether a continuation is queued after the bridge yielded the loop.
        var resumeQueued = false
    }

    /// Bytes a synchronous producer may write in one go before the bridge yields the loop to the other
    /// connections on it (the rest follows in a later turn).
    static var bytesPerTurn: Int { 1024 * 1024 }

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
        self.appendValue = { value, buffer in encoder.append(value, to: &buffer.pointee) }
        self.appendValues = { values, buffer in
            encoder.append(contentsOf: values, to: &buffer.pointee)
        }
        self.window = window
        self.failureProblem = failureProblem
        self.heartbeats = heartbeats
        self.onEnd = onEnd
        state = .allocate(capacity: 1)
        state.initialize(to: State())
        // Strong on purpose: the writer drops its callbacks when the stream ends, which breaks the cycle.
        writer.onWritable = { self.writerBecameWritable() }
        writer.onClose = { self.writerClosed() }
        writer.onShutdown = { self.shutdownRequested() }
        write { encoder.appendPrologue(to: &$0) }
        heartbeats?.add(self)
    }

    deinit {
        state.deinitialize(count: 1)
        state.deallocate()
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
            // Inside our own request, on the loop: straight into the lent buffer. The next window is
            // requested when the request returns, not as this call's demand.
            if let session = state.pointee.session {
                appendValue(input, session)
                state.pointee.sessionValues &+= 1
            } else {
                perform(written(input))
            }
            return .none
        }
        hop { bridge in
            bridge.perform(bridge.written(input))
        }
        return .none
    }

    /// Receives several values at once (from a producer that batches, see ``TermBatchSubscriber``): inside
    /// the bridge's own request they are written in one specialized loop; otherwise one by one, as
    /// ``receive(_:)`` would. The values are copied if they must hop.
    func receive(values: UnsafeBufferPointer<Input>) -> Subscribers.Demand {
        if isInsideOwnRequest && hops.load(ordering: .relaxed) == 0, let session = state.pointee.session {
            appendValues(values, session)
            state.pointee.sessionValues &+= values.count
            return .none
        }
        for value in values { _ = receive(value) }
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
        let events = state.pointee.events
        let perValue = events > 0 ? max(1, state.pointee.bytes / events) : window.initialBytesPerValue
        return min(window.maximum, max(1, writer.writableBytes / perValue))
    }

    private func subscribed(_ subscription: any Subscription) {
        perform(state.pointee.machine.subscribed(subscription, window: nextWindow))
    }

    /// Writes one value that arrived outside a session; returns `.request` when the next window is due.
    private func written(_ input: Input) -> DemandBridgeStateMachine.Action {
        guard state.pointee.machine.acceptsValues else { return .none }
        write { encoder.append(input, to: &$0) }
        state.pointee.events &+= 1
        return state.pointee.machine.valuesWritten(1) { nextWindow }
    }

    private func completed(_ completion: Subscribers.Completion<Failure>) {
        switch completion {
        case .finished: perform(state.pointee.machine.finished())
        case .failure(let error): perform(state.pointee.machine.failed(failureProblem(error)))
        }
    }

    private func writerBecameWritable() {
        perform(state.pointee.machine.becameWritable(window: nextWindow))
    }

    private func writerClosed() {
        perform(state.pointee.machine.clientGone())
        finish()
    }

    private func shutdownRequested() {
        perform(state.pointee.machine.shutdownRequested())
    }

    /// Called by the loop's heartbeat ticker; writes a heartbeat after `ticksPerHeartbeat` idle ticks.
    func heartbeatTick(ticksPerHeartbeat: Int) {
        guard !state.pointee.machine.hasEnded else { return }
        let events = state.pointee.events
        if events != state.pointee.eventsAtLastHeartbeatCheck {
            state.pointee.eventsAtLastHeartbeatCheck = events
            state.pointee.idleTicks = 0
            return
        }
        state.pointee.idleTicks += 1
        if state.pointee.idleTicks >= ticksPerHeartbeat {
            state.pointee.idleTicks = 0
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

    /// Requests `count` values, and goes on requesting window after window while a synchronous producer
    /// fills them and the writer stays writable, up to ``bytesPerTurn``; then yields the loop.
    ///
    /// Each request runs in an append session: the thread is marked so that values delivered inside take
    /// the fast path, and the outbound buffer is lent for the duration, so those values are written with
    /// no per-value call into the writer. Nothing inside may touch the writer: an end that arrives
    /// inside is written into the session and the response finished after it.
    private func request(_ count: Int, from subscription: any Subscription) {
        guard state.pointee.session == nil else {
            // Re-entered from inside a session (the producer asked for more on our behalf): plain request.
            subscription.request(.max(count))
            return
        }
        var count = count
        var written = 0
        while true {
            let thread = UInt(bitPattern: Int(bitPattern: pthread_self()))
            let previous = requestingThread.exchange(thread, ordering: .relaxed)
            var sessionBytes = 0
            state.pointee.sessionValues = 0
            writer.withAppendBuffer { buffer in
                let before = buffer.count
                withUnsafeMutablePointer(to: &buffer) { lent in
                    state.pointee.session = lent
                    subscription.request(.max(count))
                    state.pointee.session = nil
                }
                sessionBytes = buffer.count &- before
            }
            requestingThread.store(previous, ordering: .relaxed)
            let values = state.pointee.sessionValues
            state.pointee.sessionValues = 0
            state.pointee.bytes &+= sessionBytes
            state.pointee.events &+= values
            written &+= sessionBytes
            if state.pointee.finishAfterSession {
                state.pointee.finishAfterSession = false
                finish()
                return
            }
            guard values > 0 else { return }  // an asynchronous producer: its values hop in later
            let action = state.pointee.machine.valuesWritten(values) { written < Self.bytesPerTurn ? nextWindow : 0 }
            guard case .request(_, let next) = action else {
                if written >= Self.bytesPerTurn { yieldLoop() }
                return
            }
            count = next
        }
    }

    /// Lets the loop serve its other connections, then asks for the next window if it is still due.
    private func yieldLoop() {
        guard !state.pointee.resumeQueued else { return }
        state.pointee.resumeQueued = true
        loop.execute { [self] in
            state.pointee.resumeQueued = false
            perform(state.pointee.machine.becameWritable(window: nextWindow))
        }
    }

    private func write(_ body: (inout OutboundBuffer) -> Void) {
        if let session = state.pointee.session {
            // Inside a session the buffer is lent to us already; the session counts the bytes.
            body(&session.pointee)
            return
        }
        writer.withAppendBuffer { buffer in
            let before = buffer.count
            body(&buffer)
            state.pointee.bytes &+= buffer.count &- before
        }
    }

    /// Reports the summary once, then ends the response if it is still open (after the session, if the
    /// end came inside one).
    private func finish() {
        if state.pointee.session != nil {
            state.pointee.finishAfterSession = true
            return
        }
        if let onEnd, let reason = state.pointee.machine.endReason {
            self.onEnd = nil
            heartbeats?.remove(self)
            onEnd(StreamSummary(events: state.pointee.events, bytes: state.pointee.bytes, end: reason))
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

/// A bridge streaming sequence terms takes them a batch at a time: one call per batch from the sequence
/// subscription (compiled generic over its subscriber), then a specialized loop writes the batch.
extension DemandBridge: TermBatchSubscriber where Encoder.Element == Term, Failure == Never {
    func receive(batch: UnsafeBufferPointer<Term>) -> Subscribers.Demand {
        receive(values: batch)
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
