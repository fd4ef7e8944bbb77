/// The states of one forwarding subscription.
///
/// **Thread safety:** value type; guarded by its owner's lock.
internal struct ForwardingStateMachine<Downstream> {
    private enum State {
        /// Created, no subscription yet. Next: `.forwarding`, `.terminal`.
        case awaitingSubscription(Downstream)
        /// Passing values and demand through; `hasRequested` once downstream's first request went up.
        /// Next: `.terminal`.
        case forwarding(upstream: any Subscription, downstream: Downstream, hasRequested: Bool)
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
        state = .forwarding(upstream: subscription, downstream: downstream, hasRequested: false)
        return downstream
    }

    /// The upstream to pass demand to, if still forwarding.
    func upstreamForDemand() -> (any Subscription)? {
        if case .forwarding(let upstream, _, _) = state { return upstream }
        return nil
    }

    /// The upstream to pass demand to, if still forwarding, and whether this is downstream's first request.
    mutating func demandRequested() -> (upstream: any Subscription, isFirst: Bool)? {
        guard case .forwarding(let upstream, let downstream, let hasRequested) = state else { return nil }
        if !hasRequested { state = .forwarding(upstream: upstream, downstream: downstream, hasRequested: true) }
        return (upstream, !hasRequested)
    }

    /// The downstream to send a value to, if still forwarding.
    func downstreamForValue() -> Downstream? {
        if case .forwarding(_, let downstream, _) = state { return downstream }
        return nil
    }

    /// The operator ends the stream itself; returns what to cancel and whom to complete.
    mutating func terminated() -> (upstream: any Subscription, downstream: Downstream)? {
        guard case .forwarding(let upstream, let downstream, _) = state else { return nil }
        state = .terminal
        return (upstream, downstream)
    }

    /// Upstream completed; returns whom to complete.
    mutating func upstreamCompleted() -> Downstream? {
        guard case .forwarding(_, let downstream, _) = state else { return nil }
        state = .terminal
        return downstream
    }

    mutating func cancelled() -> (any Subscription)? {
        defer { state = .terminal }
        if case .forwarding(let upstream, _, _) = state { return upstream }
        return nil
    }
}

/// The subscription of a forwarding operator: passes demand through (as its ``Forwarding/demandPolicy``
/// says) and may end the stream early.
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
    private let demandPolicy: ForwardingDemandPolicy  // Immutable: read from any thread.

    init(forwarding: F, downstream: Downstream) {
        self.forwarding = forwarding
        name = forwarding.name
        demandPolicy = forwarding.demandPolicy
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
            return demandPolicy.upstreamDemand(for: downstream.receive(output), isFirstRequest: false)
        case .drop:
            return .max(1)
        case .skip:
            return .none
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
            if let last = forwarding.outputOnFinish() { _ = downstream.receive(last) }
            downstream.receive(completion: .finished)
        case .failure(let error):
            downstream.receive(completion: .failure(forwarding.failure(from: error)))
        }
    }

    func request(_ demand: Subscribers.Demand) {
        if demand == .none { apiViolation("demand must not be zero") }
        guard let (upstream, isFirst) = lock.withLock({ machine.demandRequested() }) else { return }
        upstream.request(demandPolicy.upstreamDemand(for: demand, isFirstRequest: isFirst))
    }

    func cancel() {
        lock.withLock { machine.cancelled() }?.cancel()
    }
}
