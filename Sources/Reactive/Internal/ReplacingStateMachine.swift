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
