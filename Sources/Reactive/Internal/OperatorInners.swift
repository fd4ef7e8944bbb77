// The two subscription shapes most operators share, so that each operator file holds only
// what is particular to it (in the way Combine's own reducers share one "producer" base):
//
// - `ReducerInner` runs a `Reduction`: requests unlimited upstream, folds every value, and
//   delivers one result when upstream finishes (or the reduction ends early), holding it
//   until downstream has demand. `reduce`, `count`, `first`, `contains`, `min`, … use it.
// - `ForwardingInner` runs a `Forwarding`: passes demand straight through, and for each value
//   sends, drops (asking upstream for one more), or ends the stream by finishing or failing,
//   cancelling upstream. The `try` operators, `prefix`, `output(in:)`, … use it.

// MARK: - Reduction

/// What a reducing operator does with each value; ``ReducerInner`` does the rest.
///
/// **Thread safety:** value type, owned by one ``ReducerInner`` and touched only on the
/// upstream's serialized `receive` path.
internal protocol Reduction {
    associatedtype Input
    associatedtype Output
    associatedtype UpstreamFailure: Error
    associatedtype Failure: Error

    /// The operator's name; the description of its subscription.
    var name: String { get }

    /// Folds one value in. Runs outside any lock.
    mutating func reduce(_ input: Input) -> ReductionStep<Output, Failure>

    /// The value to deliver when upstream finishes normally; `nil` finishes without one.
    mutating func resultOnFinish() -> Output?

    /// The operator's failure for an upstream failure.
    func failure(from error: UpstreamFailure) -> Failure
}

extension Reduction where UpstreamFailure == Failure {
    func failure(from error: UpstreamFailure) -> Failure { error }
}

/// What a ``Reduction`` decided about one value.
internal enum ReductionStep<Output, Failure: Error> {
    /// Keep going.
    case `continue`
    /// Stop now: cancel upstream, deliver the value if any, and finish.
    case finish(Output?)
    /// Stop now: cancel upstream and fail.
    case fail(Failure)
}

/// The states of one reducing subscription.
///
/// **Thread safety:** value type; guarded by its owner's lock.
internal struct ReducerStateMachine<Output, Downstream> {
    private enum State {
        /// Created, no subscription yet. Next: `.reducing`, `.terminal`.
        case awaitingSubscription(Downstream)
        /// Upstream is running; `hasDemand` once downstream asked for anything.
        /// Next: `.holding`, `.terminal`.
        case reducing(upstream: any Subscription, downstream: Downstream, hasDemand: Bool)
        /// Upstream is done; the result waits for downstream demand. Next: `.terminal`.
        case holding(Output, downstream: Downstream)
        /// Delivered, failed or cancelled; everything is released.
        case terminal
    }

    /// What the owner does after an event, outside the lock.
    enum Action {
        case none
        case cancel(any Subscription)
        case deliver(Output, Downstream, cancelling: (any Subscription)?)
        case finish(Downstream, cancelling: (any Subscription)?)
        case fail(Downstream, cancelling: (any Subscription)?)
    }

    private var state: State

    init(downstream: Downstream) {
        state = .awaitingSubscription(downstream)
    }

    /// Upstream's subscription arrived; returns the downstream to hand ourselves to, or `nil`
    /// if the subscription is a duplicate (or came after cancel) and must be cancelled.
    mutating func subscriptionReceived(_ subscription: any Subscription) -> Downstream? {
        guard case .awaitingSubscription(let downstream) = state else { return nil }
        state = .reducing(upstream: subscription, downstream: downstream, hasDemand: false)
        return downstream
    }

    mutating func demandRequested() -> Action {
        switch state {
        case .reducing(let upstream, let downstream, false):
            state = .reducing(upstream: upstream, downstream: downstream, hasDemand: true)
            return .none
        case .holding(let output, let downstream):
            state = .terminal
            return .deliver(output, downstream, cancelling: nil)
        case .awaitingSubscription, .reducing, .terminal:
            return .none
        }
    }

    /// Whether a value that arrived now should be folded in.
    func isReducing() -> Bool {
        if case .reducing = state { return true }
        return false
    }

    /// The result is known: upstream finished (`cancelUpstream == false`) or the reduction
    /// stopped early (`true`).
    mutating func resultReady(_ output: Output?, cancelUpstream: Bool) -> Action {
        guard case .reducing(let upstream, let downstream, let hasDemand) = state else { return .none }
        let cancelling = cancelUpstream ? upstream : nil
        guard let output else {
            state = .terminal
            return .finish(downstream, cancelling: cancelling)
        }
        if hasDemand {
            state = .terminal
            return .deliver(output, downstream, cancelling: cancelling)
        }
        state = .holding(output, downstream: downstream)
        return cancelling.map { .cancel($0) } ?? .none
    }

    /// Upstream failed (`cancelUpstream == false`) or the reduction threw (`true`).
    mutating func failed(cancelUpstream: Bool) -> Action {
        guard case .reducing(let upstream, let downstream, _) = state else { return .none }
        state = .terminal
        return .fail(downstream, cancelling: cancelUpstream ? upstream : nil)
    }

    mutating func cancelled() -> (any Subscription)? {
        defer { state = .terminal }
        if case .reducing(let upstream, _, _) = state { return upstream }
        return nil
    }
}

/// The subscription of a reducing operator: requests unlimited upstream and delivers one value.
///
/// **Ownership:** retained by upstream (as its subscriber) and by downstream (as its
/// subscription); releases both on delivery, failure or cancel.
///
/// **Thread safety:** `request` and `cancel` are safe from any thread; the reduction runs on
/// upstream's serialized path outside the lock.
internal final class ReducerInner<R: Reduction, Downstream: Subscriber>: Subscriber, Subscription,
    CustomStringConvertible, CustomPlaygroundDisplayConvertible
where Downstream.Input == R.Output, Downstream.Failure == R.Failure {
    typealias Input = R.Input
    typealias Failure = R.UpstreamFailure

    private let lock = Lock()
    private var machine: ReducerStateMachine<R.Output, Downstream>  // Guarded by lock.
    // Touched only from upstream's receive calls, which never overlap.
    private var reduction: R
    private let name: String

    init(reduction: R, downstream: Downstream) {
        self.reduction = reduction
        name = reduction.name
        machine = ReducerStateMachine(downstream: downstream)
    }

    var description: String { name }

    var playgroundDescription: Any { description }

    func receive(subscription: any Subscription) {
        guard let downstream = lock.withLock({ machine.subscriptionReceived(subscription) }) else {
            subscription.cancel()
            return
        }
        downstream.receive(subscription: self)
        subscription.request(.unlimited)
    }

    func receive(_ input: Input) -> Subscribers.Demand {
        guard lock.withLock({ machine.isReducing() }) else { return .none }
        switch reduction.reduce(input) {
        case .continue:
            break
        case .finish(let output):
            perform(lock.withLock { machine.resultReady(output, cancelUpstream: true) }, failure: nil)
        case .fail(let error):
            perform(lock.withLock { machine.failed(cancelUpstream: true) }, failure: error)
        }
        return .none
    }

    func receive(completion: Subscribers.Completion<Failure>) {
        switch completion {
        case .finished:
            guard lock.withLock({ machine.isReducing() }) else { return }
            let output = reduction.resultOnFinish()
            perform(lock.withLock { machine.resultReady(output, cancelUpstream: false) }, failure: nil)
        case .failure(let error):
            let failure = reduction.failure(from: error)
            perform(lock.withLock { machine.failed(cancelUpstream: false) }, failure: failure)
        }
    }

    func request(_ demand: Subscribers.Demand) {
        if demand == .none { apiViolation("demand must not be zero") }
        perform(lock.withLock { machine.demandRequested() }, failure: nil)
    }

    func cancel() {
        lock.withLock { machine.cancelled() }?.cancel()
    }

    private func perform(_ action: ReducerStateMachine<R.Output, Downstream>.Action, failure: R.Failure?) {
        switch action {
        case .none:
            break
        case .cancel(let upstream):
            upstream.cancel()
        case .deliver(let output, let downstream, let upstream):
            upstream?.cancel()
            _ = downstream.receive(output)
            downstream.receive(completion: .finished)
        case .finish(let downstream, let upstream):
            upstream?.cancel()
            downstream.receive(completion: .finished)
        case .fail(let downstream, let upstream):
            upstream?.cancel()
            guard let failure else { internalInconsistency("reducer failed without an error") }
            downstream.receive(completion: .failure(failure))
        }
    }
}

// MARK: - Forwarding

/// What a forwarding operator does with each value; ``ForwardingInner`` does the rest.
///
/// **Thread safety:** value type, owned by one ``ForwardingInner`` and touched only on the
/// upstream's serialized `receive` path (and once on subscription, for ``isExhausted``).
internal protocol Forwarding {
    associatedtype Input
    associatedtype Output
    associatedtype UpstreamFailure: Error
    associatedtype Failure: Error

    /// The operator's name; the description of its subscription.
    var name: String { get }

    /// True when the operator will forward nothing at all (`prefix(0)`): it finishes as soon as
    /// it is subscribed.
    var isExhausted: Bool { get }

    /// Decides what to do with one value. Runs outside any lock.
    mutating func receive(_ input: Input) -> ForwardingStep<Output, Failure>

    /// The operator's failure for an upstream failure.
    func failure(from error: UpstreamFailure) -> Failure
}

extension Forwarding {
    var isExhausted: Bool { false }
}

extension Forwarding where UpstreamFailure == Failure {
    func failure(from error: UpstreamFailure) -> Failure { error }
}

/// What a ``Forwarding`` decided about one value.
internal enum ForwardingStep<Output, Failure: Error> {
    /// Send it downstream; downstream's answer is the demand returned upstream.
    case send(Output)
    /// Drop it and ask upstream for one more in its place.
    case drop
    /// Cancel upstream, send it downstream, and finish.
    case sendAndFinish(Output)
    /// Cancel upstream and finish.
    case finish
    /// Cancel upstream and fail.
    case fail(Failure)
}

/// The states of one forwarding subscription.
///
/// **Thread safety:** value type; guarded by its owner's lock.
internal struct ForwardingStateMachine<Downstream> {
    private enum State {
        /// Created, no subscription yet. Next: `.forwarding`, `.terminal`.
        case awaitingSubscription(Downstream)
        /// Passing values and demand through. Next: `.terminal`.
        case forwarding(upstream: any Subscription, downstream: Downstream)
        /// Finished, failed or cancelled; everything is released.
        case terminal
    }

    private var state: State

    init(downstream: Downstream) {
        state = .awaitingSubscription(downstream)
    }

    /// Returns the downstream to hand ourselves to, or `nil` if the subscription must be cancelled.
    mutating func subscriptionReceived(_ subscription: any Subscription) -> Downstream? {
        guard case .awaitingSubscription(let downstream) = state else { return nil }
        state = .forwarding(upstream: subscription, downstream: downstream)
        return downstream
    }

    /// The upstream to pass demand to, if still forwarding.
    func upstreamForDemand() -> (any Subscription)? {
        if case .forwarding(let upstream, _) = state { return upstream }
        return nil
    }

    /// The downstream to send a value to, if still forwarding.
    func downstreamForValue() -> Downstream? {
        if case .forwarding(_, let downstream) = state { return downstream }
        return nil
    }

    /// The operator ends the stream itself; returns what to cancel and whom to complete.
    mutating func terminated() -> (upstream: any Subscription, downstream: Downstream)? {
        guard case .forwarding(let upstream, let downstream) = state else { return nil }
        state = .terminal
        return (upstream, downstream)
    }

    /// Upstream completed; returns whom to complete.
    mutating func upstreamCompleted() -> Downstream? {
        guard case .forwarding(_, let downstream) = state else { return nil }
        state = .terminal
        return downstream
    }

    mutating func cancelled() -> (any Subscription)? {
        defer { state = .terminal }
        if case .forwarding(let upstream, _) = state { return upstream }
        return nil
    }
}

/// The subscription of a forwarding operator: passes demand through and may end the stream early.
///
/// **Ownership:** retained by upstream (as its subscriber) and by downstream (as its
/// subscription); releases both on completion or cancel.
///
/// **Thread safety:** `request` and `cancel` are safe from any thread; the operator's step runs on
/// upstream's serialized path outside the lock.
internal final class ForwardingInner<F: Forwarding, Downstream: Subscriber>: Subscriber, Subscription,
    CustomStringConvertible, CustomPlaygroundDisplayConvertible
where Downstream.Input == F.Output, Downstream.Failure == F.Failure {
    typealias Input = F.Input
    typealias Failure = F.UpstreamFailure

    private let lock = Lock()
    private var machine: ForwardingStateMachine<Downstream>  // Guarded by lock.
    // Touched only from upstream's receive calls, which never overlap.
    private var forwarding: F
    private let name: String

    init(forwarding: F, downstream: Downstream) {
        self.forwarding = forwarding
        name = forwarding.name
        machine = ForwardingStateMachine(downstream: downstream)
    }

    var description: String { name }

    var playgroundDescription: Any { description }

    func receive(subscription: any Subscription) {
        guard let downstream = lock.withLock({ machine.subscriptionReceived(subscription) }) else {
            subscription.cancel()
            return
        }
        downstream.receive(subscription: self)
        if forwarding.isExhausted, let (upstream, downstream) = lock.withLock({ machine.terminated() }) {
            upstream.cancel()
            downstream.receive(completion: .finished)
        }
    }

    func receive(_ input: Input) -> Subscribers.Demand {
        guard let downstream = lock.withLock({ machine.downstreamForValue() }) else { return .none }
        switch forwarding.receive(input) {
        case .send(let output):
            return downstream.receive(output)
        case .drop:
            return .max(1)
        case .sendAndFinish(let output):
            guard let (upstream, downstream) = lock.withLock({ machine.terminated() }) else { return .none }
            upstream.cancel()
            _ = downstream.receive(output)
            downstream.receive(completion: .finished)
        case .finish:
            guard let (upstream, downstream) = lock.withLock({ machine.terminated() }) else { return .none }
            upstream.cancel()
            downstream.receive(completion: .finished)
        case .fail(let error):
            guard let (upstream, downstream) = lock.withLock({ machine.terminated() }) else { return .none }
            upstream.cancel()
            downstream.receive(completion: .failure(error))
        }
        return .none
    }

    func receive(completion: Subscribers.Completion<Failure>) {
        guard let downstream = lock.withLock({ machine.upstreamCompleted() }) else { return }
        switch completion {
        case .finished:
            downstream.receive(completion: .finished)
        case .failure(let error):
            downstream.receive(completion: .failure(forwarding.failure(from: error)))
        }
    }

    func request(_ demand: Subscribers.Demand) {
        if demand == .none { apiViolation("demand must not be zero") }
        lock.withLock { machine.upstreamForDemand() }?.request(demand)
    }

    func cancel() {
        lock.withLock { machine.cancelled() }?.cancel()
    }
}

// MARK: - Replacing

/// The states of a subscription that may have to deliver one replacement value when upstream
/// completes (`replaceError`, `replaceEmpty`), so it counts downstream's outstanding demand.
///
/// **Thread safety:** value type; guarded by its owner's lock.
internal struct ReplacingStateMachine<Downstream> {
    private enum State {
        /// Created, no subscription yet. Next: `.forwarding`, `.terminal`.
        case awaitingSubscription(Downstream)
        /// Passing values through; `demand` is what downstream asked for and has not received.
        /// Next: `.holding`, `.terminal`.
        case forwarding(upstream: any Subscription, downstream: Downstream, demand: Subscribers.Demand, sawValue: Bool)
        /// Upstream completed; the replacement waits for downstream demand. Next: `.terminal`.
        case holding(Downstream)
        /// Completed or cancelled; everything is released.
        case terminal
    }

    /// What to do after a request, outside the lock.
    enum RequestAction {
        case none
        case request(any Subscription, Subscribers.Demand)
        case deliverReplacement(Downstream)
    }

    /// What to do when upstream completed in a way that calls for the replacement.
    enum ReplacementAction {
        case none
        case deliverReplacement(Downstream)
        case finish(Downstream)
    }

    private var state: State

    init(downstream: Downstream) {
        state = .awaitingSubscription(downstream)
    }

    mutating func subscriptionReceived(_ subscription: any Subscription) -> Downstream? {
        guard case .awaitingSubscription(let downstream) = state else { return nil }
        state = .forwarding(upstream: subscription, downstream: downstream, demand: .none, sawValue: false)
        return downstream
    }

    mutating func demandRequested(_ demand: Subscribers.Demand) -> RequestAction {
        switch state {
        case .forwarding(let upstream, let downstream, let outstanding, let sawValue):
            state = .forwarding(
                upstream: upstream,
                downstream: downstream,
                demand: outstanding + demand,
                sawValue: sawValue
            )
            return .request(upstream, demand)
        case .holding(let downstream):
            state = .terminal
            return .deliverReplacement(downstream)
        case .awaitingSubscription, .terminal:
            return .none
        }
    }

    /// A value arrived; uses up one unit of demand and returns whom to send it to.
    mutating func valueReceived() -> Downstream? {
        guard case .forwarding(let upstream, let downstream, let demand, _) = state else { return nil }
        state = .forwarding(upstream: upstream, downstream: downstream, demand: demand - 1, sawValue: true)
        return downstream
    }

    /// Downstream returned more demand from `receive(_:)`.
    mutating func demandReturned(_ demand: Subscribers.Demand) {
        guard case .forwarding(let upstream, let downstream, let outstanding, let sawValue) = state else { return }
        state = .forwarding(
            upstream: upstream,
            downstream: downstream,
            demand: outstanding + demand,
            sawValue: sawValue
        )
    }

    /// Whether any value went through (`replaceEmpty` replaces only an empty stream).
    func hasSeenValue() -> Bool {
        if case .forwarding(_, _, _, true) = state { return true }
        return false
    }

    /// Upstream completed in the way that calls for the replacement.
    mutating func replacementNeeded() -> ReplacementAction {
        guard case .forwarding(_, let downstream, let demand, _) = state else { return .none }
        if demand > 0 {
            state = .terminal
            return .deliverReplacement(downstream)
        }
        state = .holding(downstream)
        return .none
    }

    /// Upstream completed in a way that is passed through unchanged.
    mutating func upstreamCompleted() -> Downstream? {
        guard case .forwarding(_, let downstream, _, _) = state else { return nil }
        state = .terminal
        return downstream
    }

    mutating func cancelled() -> (any Subscription)? {
        defer { state = .terminal }
        if case .forwarding(let upstream, _, _, _) = state { return upstream }
        return nil
    }
}

// MARK: - Sequential

/// The states of a subscription that reads from one upstream after another, carrying downstream's
/// outstanding demand over (`append`/`prepend`, `catch`, `retry`). Each upstream is numbered by
/// its `generation`, so that a late event from an earlier one is ignored.
///
/// **Thread safety:** value type; guarded by its owner's lock.
internal struct SequentialStateMachine<Downstream> {
    private enum State {
        /// Waiting for the first upstream's subscription. Next: `.active`, `.terminal`.
        case awaitingFirst(Downstream)
        /// Reading from upstream number `generation`; `demand` is what downstream asked for and
        /// has not received. Next: `.switching`, `.terminal`.
        case active(upstream: any Subscription, downstream: Downstream, demand: Subscribers.Demand, generation: Int)
        /// Upstream `generation - 1` ended; the next one is being subscribed. Next: `.active`, `.terminal`.
        case switching(downstream: Downstream, demand: Subscribers.Demand, generation: Int)
        /// Completed or cancelled; everything is released.
        case terminal
    }

    /// What to do when an upstream's subscription arrives.
    enum SubscriptionAction {
        case cancel
        case handOver(Downstream)
        case request(Subscribers.Demand)
        case none
    }

    private var state: State

    init(downstream: Downstream) {
        state = .awaitingFirst(downstream)
    }

    mutating func subscriptionReceived(_ subscription: any Subscription, generation: Int) -> SubscriptionAction {
        switch state {
        case .awaitingFirst(let downstream) where generation == 0:
            state = .active(upstream: subscription, downstream: downstream, demand: .none, generation: 0)
            return .handOver(downstream)
        case .switching(let downstream, let demand, let current) where current == generation:
            state = .active(upstream: subscription, downstream: downstream, demand: demand, generation: generation)
            return demand > 0 ? .request(demand) : .none
        case .awaitingFirst, .switching, .active, .terminal:
            return .cancel
        }
    }

    /// Returns the upstream to pass the demand to, if one is active.
    mutating func demandRequested(_ demand: Subscribers.Demand) -> (any Subscription)? {
        switch state {
        case .active(let upstream, let downstream, let outstanding, let generation):
            state = .active(
                upstream: upstream,
                downstream: downstream,
                demand: outstanding + demand,
                generation: generation
            )
            return upstream
        case .switching(let downstream, let outstanding, let generation):
            state = .switching(downstream: downstream, demand: outstanding + demand, generation: generation)
            return nil
        case .awaitingFirst, .terminal:
            return nil
        }
    }

    /// A value arrived from upstream `generation`; uses up one unit of demand, returns whom to send it to.
    mutating func valueReceived(generation: Int) -> Downstream? {
        guard case .active(let upstream, let downstream, let demand, generation) = state else { return nil }
        state = .active(upstream: upstream, downstream: downstream, demand: demand - 1, generation: generation)
        return downstream
    }

    /// Downstream returned more demand from `receive(_:)`.
    mutating func demandReturned(_ more: Subscribers.Demand, generation: Int) {
        guard case .active(let upstream, let downstream, let demand, generation) = state else { return }
        state = .active(upstream: upstream, downstream: downstream, demand: demand + more, generation: generation)
    }

    /// Whether upstream `generation` is the active one.
    func isActive(generation: Int) -> Bool {
        if case .active(_, _, _, generation) = state { return true }
        return false
    }

    /// Upstream `generation` ended and another follows; returns the next generation's number.
    mutating func switchToNext(after generation: Int) -> Int? {
        guard case .active(_, let downstream, let demand, generation) = state else { return nil }
        state = .switching(downstream: downstream, demand: demand, generation: generation + 1)
        return generation + 1
    }

    /// The stream ends (upstream `generation` completed for good, or switching failed);
    /// returns whom to complete.
    mutating func completed(generation: Int) -> Downstream? {
        switch state {
        case .active(_, let downstream, _, generation):
            state = .terminal
            return downstream
        case .switching(let downstream, _, let current) where current == generation + 1:
            state = .terminal
            return downstream
        case .awaitingFirst, .active, .switching, .terminal:
            return nil
        }
    }

    mutating func cancelled() -> (any Subscription)? {
        defer { state = .terminal }
        if case .active(let upstream, _, _, _) = state { return upstream }
        return nil
    }
}

/// The subscriber an upstream of a sequential operator sees: forwards to its owner, tagged with
/// the upstream's generation.
///
/// **Thread safety:** value type; forwards to an owner that is safe from any thread.
internal struct SequentialSource<Input, Failure: Error>: Subscriber, CustomStringConvertible {
    let combineIdentifier = CombineIdentifier()
    let name: String
    let generation: Int
    let onSubscription: (any Subscription, Int) -> Void
    let onValue: (Input, Int) -> Subscribers.Demand
    let onCompletion: (Subscribers.Completion<Failure>, Int) -> Void

    var description: String { name }

    func receive(subscription: any Subscription) {
        onSubscription(subscription, generation)
    }

    func receive(_ input: Input) -> Subscribers.Demand {
        onValue(input, generation)
    }

    func receive(completion: Subscribers.Completion<Failure>) {
        onCompletion(completion, generation)
    }
}
