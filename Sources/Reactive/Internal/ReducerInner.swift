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
