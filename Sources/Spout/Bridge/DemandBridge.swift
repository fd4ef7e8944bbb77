import EventLoops
import HTTPServer
import Reactive
import Synchronization

/// The subscriber that turns a streaming response's writability into demand: the client's read rate
/// becomes the publisher's pace.
///
/// It requests a window of values sized to what the outbound buffer can take, writes each value straight
/// into the buffer, asks for the next window only while the writer stays writable, and otherwise waits for
/// the writer's not-writable → writable edge. A client that stops reading therefore stops the producer with
/// at most one window in flight; one that leaves cancels the subscription, and with it everything upstream.
///
/// Three parts, each with one job:
///
/// - the writer (``StreamWriter``, a ``BodyWriter`` in the service) owns the stream: open or closed,
///   writable or not. The bridge asks it and keeps no copy;
/// - ``DemandBridgeStateMachine`` owns the demand: the subscription, the window outstanding, whether the
///   bridge is inside its own request, and how the stream ended;
/// - the ``StreamEncoder`` owns the bytes of the format.
///
/// Values may arrive on any thread. Those that arrive on the loop with nothing queued before them are
/// handled at once: inside the bridge's own request (a synchronous producer such as the sequences) they go
/// straight into the buffer the writer lent for the call, so a window costs one buffer hand-over and one
/// flush check, not one per value, and a ``BatchSubscriber`` producer hands over a whole batch per call. All
/// other values hop onto the loop in order, and once one has hopped, later ones follow it. A producer that
/// keeps up with a fast reader yields the loop after ``bytesPerTurn`` so other connections are served.
///
/// Ending is one transition with one set of actions: the machine moves to `ended` once, and the bridge then
/// detaches from the writer, cancels the subscription if it still holds one, writes the final frame and
/// finishes the response (or, if the client left, only cancels), and reports the ``StreamSummary``.
///
/// **Ownership:** retained by the upstream subscription (as its subscriber), by the writer's callbacks and
/// by the loop's heartbeat ticker until the stream ends; it then drops all three.
///
/// **Thread safety:** the `Subscriber` methods are safe to call from any thread; everything else is
/// confined to the writer's loop.
final class DemandBridge<Encoder: StreamEncoder, Failure: Error>: BatchSubscriber, HeartbeatParticipant,
    CustomStringConvertible, @unchecked Sendable
{
    // @unchecked Sendable: `state` (and what it points to) is confined to `loop`; `hops` is an atomic.
    typealias Input = Encoder.Element

    /// Limits on the demand windows.
    struct Window: Sendable {
        /// The most values requested at once.
        var maximum = 8192
        /// The guess of bytes per value before any was written.
        var initialBytesPerValue = 32
    }

    private let writer: any StreamWriter  // Immutable.
    private let loop: EventLoop  // Immutable.
    private let encoder: Encoder  // Immutable.
    /// `encoder.append`, made in `init`, where the encoder's type is known: the per-value call from a
    /// producer compiled without knowing it (another module's generic code) then lands in specialized
    /// code instead of going through witness tables. // Immutable.
    private let appendValue: (Input, UnsafeMutablePointer<OutboundBuffer>) -> Void
    /// `encoder.append` over several values, made in `init` like `appendValue`: the loop over a batch runs
    /// in specialized code, with the encoder inlined. // Immutable.
    private let appendValues: (UnsafeBufferPointer<Input>, UnsafeMutablePointer<OutboundBuffer>) -> Void
    private let window: Window  // Immutable.
    private let failureProblem: @Sendable (Failure) -> Problem  // Immutable.
    /// For a failure that is an ordinary end rather than an error: the reason to end with. // Immutable.
    private let failureEnd: (@Sendable (Failure) -> StreamEnd?)?
    private let heartbeats: HeartbeatTicker?  // Immutable.
    private let onEnd: (StreamSummary) -> Void  // Immutable.
    /// The machine and the counters, in heap storage of their own: reached through a pointer, they cost no
    /// dynamic exclusivity check per access (a class's stored `var`s do). // Loop-confined.
    private let state: UnsafeMutablePointer<State>
    /// Deliveries and completions waiting in the loop's queue; while any wait, new ones queue too.
    private let hops = Atomic<Int>(0)

    /// The machine, and what the bridge counts for the summary and the heartbeat.
    private struct State {
        var machine = DemandBridgeStateMachine()
        /// Values written.
        var events = 0
        /// Body bytes written.
        var bytes = 0
        var eventsAtLastHeartbeatCheck = 0
        var idleTicks = 0
    }

    /// Bytes a synchronous producer may write in one go before the bridge yields the loop to the other
    /// connections on it (the rest follows in a later turn).
    static var bytesPerTurn: Int { 1024 * 1024 }

    /// - Parameters:
    ///   - writer: The streaming response to write into; its callbacks are taken over.
    ///   - encoder: The framing of the response's format.
    ///   - window: Limits on the demand windows.
    ///   - heartbeats: The loop's ticker, for keep-alives while the stream is idle.
    ///   - failureProblem: Turns a publisher failure into the problem written in the failure frame.
    ///   - failureEnd: Says which failures are ordinary ends (a channel's `overflow`): those end the stream
    ///     with the end frame of the reason returned, not a failure frame.
    ///   - onEnd: Called once on the loop when the stream has ended, however it ended.
    init(
        writer: any StreamWriter,
        encoder: Encoder,
        window: Window = Window(),
        heartbeats: HeartbeatTicker? = nil,
        failureProblem: @escaping @Sendable (Failure) -> Problem,
        failureEnd: (@Sendable (Failure) -> StreamEnd?)? = nil,
        onEnd: @escaping (StreamSummary) -> Void
    ) {
        writer.loop.preconditionInEventLoop()
        self.writer = writer
        self.loop = writer.loop
        self.encoder = encoder
        self.appendValue = { value, buffer in encoder.append(value, to: &buffer.pointee) }
        self.appendValues = { values, buffer in encoder.append(contentsOf: values, to: &buffer.pointee) }
        self.window = window
        self.failureProblem = failureProblem
        self.failureEnd = failureEnd
        self.heartbeats = heartbeats
        self.onEnd = onEnd
        state = .allocate(capacity: 1)
        state.initialize(to: State())
        write { encoder.appendPrologue(to: &$0) }
        heartbeats?.add(self)
        // Strong on purpose: the bridge drops them when the stream ends (and the writer when it closes).
        writer.onWritable = { self.perform(self.state.pointee.machine.becameWritable(window: self.nextWindow)) }
        writer.onShutdown = { self.perform(self.state.pointee.machine.shutdownRequested()) }
        writer.onClose = { self.perform(self.state.pointee.machine.clientGone()) }  // at once if closed already
    }

    /// A bridge for a publisher that cannot fail.
    convenience init(
        writer: any StreamWriter,
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

    deinit {
        state.deinitialize(count: 1)
        state.deallocate()
    }

    var description: String { "DemandBridge" }

    // MARK: Subscriber (any thread)

    func receive(subscription: any Subscription) {
        if isOnLoopInOrder {
            perform(state.pointee.machine.subscribed(subscription, window: nextWindow))
        } else {
            hop { $0.perform($0.state.pointee.machine.subscribed(subscription, window: $0.nextWindow)) }
        }
    }

    func receive(_ input: Input) -> Subscribers.Demand {
        if isOnLoopInOrder {
            deliver(input)
        } else {
            hop { $0.deliver(input) }
        }
        // The next window is requested by the bridge itself, never as this call's demand.
        return .none
    }

    /// Receives several values at once (from a producer that batches, see `BatchSubscriber`): inside the
    /// bridge's own request they are written in one specialized loop; otherwise one by one, as
    /// ``receive(_:)`` would. The values are copied if they must hop.
    func receive(batch: UnsafeBufferPointer<Input>) -> Subscribers.Demand {
        guard isOnLoopInOrder else {
            let values = Array(batch)
            hop { bridge in
                for value in values { bridge.deliver(value) }
            }
            return .none
        }
        switch state.pointee.machine.delivery(of: batch.count) {
        case .appendToSession(let session):
            appendValues(batch, session)
            state.pointee.events &+= batch.count
        case .write:
            for index in batch.indices { deliver(batch[index]) }
        case .drop:
            break
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
        let events = state.pointee.events
        let perValue = events > 0 ? max(1, state.pointee.bytes / events) : window.initialBytesPerValue
        return min(window.maximum, max(1, writer.writableBytes / perValue))
    }

    /// One value, on the loop and in order.
    private func deliver(_ input: Input) {
        switch state.pointee.machine.delivery(of: 1) {
        case .appendToSession(let session):
            appendValue(input, session)
            state.pointee.events &+= 1
        case .write:
            write { encoder.append(input, to: &$0) }
            state.pointee.events &+= 1
            perform(state.pointee.machine.valuesWritten(1) { nextWindow })
        case .drop:
            break
        }
    }

    private func completed(_ completion: Subscribers.Completion<Failure>) {
        switch completion {
        case .finished: perform(state.pointee.machine.finished())
        case .failure(let error):
            if let reason = failureEnd?(error) {
                perform(state.pointee.machine.finished(reason))
            } else {
                perform(state.pointee.machine.failed(failureProblem(error)))
            }
        }
    }

    /// Called by the loop's heartbeat ticker; writes a heartbeat after `ticksPerHeartbeat` idle ticks.
    func heartbeatTick(ticksPerHeartbeat: Int) {
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
        case .request(let subscription, let window):
            request(window, from: subscription)
        case .cancel(let subscription):
            subscription.cancel()
        case .yield:
            loop.execute { [self] in perform(state.pointee.machine.resumed(window: nextWindow)) }
        case .end(let reason, let subscription):
            end(reason, cancelling: subscription, finalFrame: .end(reason))
        case .fail(let problem):
            end(.error, cancelling: nil, finalFrame: .failure(problem))
        case .abandon(let subscription):
            // Gone, or cut by the server because it read nothing for the write-stall timeout: counted apart.
            end(writer.endedByWriteStall ? .writeStall : .clientGone, cancelling: subscription, finalFrame: nil)
        }
    }

    /// Requests `window` values, and goes on requesting window after window while a synchronous producer
    /// fills them and the writer stays writable, up to ``bytesPerTurn``; then yields the loop.
    ///
    /// Each request runs in a session: the writer lends its buffer for the call and the machine is
    /// `requesting`, so values delivered inside are appended to it with no per-value call into the writer.
    private func request(_ window: Int, from subscription: any Subscription) {
        var window = window
        var turnBytes = 0
        while true {
            let eventsBefore = state.pointee.events
            var entered = false
            writer.withAppendBuffer { buffer in
                let before = buffer.count
                withUnsafeMutablePointer(to: &buffer) { session in
                    entered = true
                    state.pointee.machine.requestStarted(session: session)
                    subscription.request(.max(window))
                }
                state.pointee.bytes &+= buffer.count &- before
                turnBytes &+= buffer.count &- before
            }
            guard entered else {
                // The writer took nothing: its stream closed without telling us (it always does); end here.
                perform(state.pointee.machine.clientGone())
                return
            }
            let received = state.pointee.events &- eventsBefore
            let action = state.pointee.machine.requestReturned(
                received: received,
                turnUsedUp: turnBytes >= Self.bytesPerTurn
            ) { nextWindow }
            guard case .request(_, let next) = action else {
                perform(action)
                return
            }
            window = next
        }
    }

    /// Appends through the writer (outside a request session), counting the bytes.
    private func write(_ body: (inout OutboundBuffer) -> Void) {
        writer.withAppendBuffer { buffer in
            let before = buffer.count
            body(&buffer)
            state.pointee.bytes &+= buffer.count &- before
        }
    }

    /// The last frame of a stream the bridge ends itself.
    private enum FinalFrame {
        case end(StreamEnd)
        case failure(Problem)
    }

    /// The end of the stream, whatever ended it; runs once (the machine reaches `ended` once). With a
    /// `finalFrame` the bridge ends the response (detached first, so the writer's `onClose` does not come
    /// back to it); without, the response is already closed (the client left).
    private func end(_ reason: StreamEnd, cancelling subscription: (any Subscription)?, finalFrame: FinalFrame?) {
        heartbeats?.remove(self)
        writer.onWritable = nil
        writer.onShutdown = nil
        writer.onClose = nil
        subscription?.cancel()
        switch finalFrame {
        case .end(let reason)?: write { encoder.appendEnd(reason, to: &$0) }
        case .failure(let problem)?: write { encoder.appendFailure(problem, to: &$0) }
        case nil: break
        }
        onEnd(StreamSummary(events: state.pointee.events, bytes: state.pointee.bytes, end: reason))
        if finalFrame != nil { writer.finish() }
    }

    // MARK: Threads

    /// Whether an event may be handled right here: on the loop with nothing queued before it.
    @inline(__always)
    private var isOnLoopInOrder: Bool {
        hops.load(ordering: .relaxed) == 0 && loop.inEventLoop
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
