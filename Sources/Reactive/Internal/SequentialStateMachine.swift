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

    /// Upstream `generation` ended and another follows; returns the next generation's number.
    mutating func switchToNext(after generation: Int) -> Int? {
        guard case .active(_, let downstream, let demand, generation) = state else { return nil }
        state = .switching(downstream: downstream, demand: demand, generation: generation + 1)
        return generation + 1
    }

    /// Whether `generation` is the attempt in progress: running, or still being subscribed (its
    /// subscription has not arrived). `retry` counts a failure of either as the attempt's failure,
    /// as Combine does, which does not wait for a subscription.
    func isCurrent(generation: Int) -> Bool {
        switch state {
        case .active(_, _, _, generation), .switching(_, _, generation): true
        case .awaitingFirst, .active, .switching, .terminal: false
        }
    }

    /// Moves from the attempt in progress, `generation` (see ``isCurrent(generation:)``), to the
    /// next; returns the next generation, or `nil` if `generation` is not in progress.
    mutating func switchFromCurrent(after generation: Int) -> Int? {
        switch state {
        case .active(_, let downstream, let demand, generation), .switching(let downstream, let demand, generation):
            state = .switching(downstream: downstream, demand: demand, generation: generation + 1)
            return generation + 1
        case .awaitingFirst, .active, .switching, .terminal:
            return nil
        }
    }

    /// The attempt in progress, `generation`, completed and no retry follows: returns the downstream
    /// to pass the completion to, or `nil` if `generation` is not in progress.
    mutating func currentCompleted(generation: Int) -> Downstream? {
        switch state {
        case .active(_, let downstream, _, generation), .switching(let downstream, _, generation):
            state = .terminal
            return downstream
        case .awaitingFirst, .active, .switching, .terminal:
            return nil
        }
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
