/// The state of a `retry(_:withBackoff:…)` subscription: which attempt runs, the downstream demand,
/// the retries used and the backoff timer.
///
/// **Ownership:** value type, stored in its subscription.
///
/// **Thread safety:** value type; not shared. Guarded by its subscription's lock.
internal struct RetryWithBackoffStateMachine<Downstream: Subscriber, Upstream> {
    enum SubscriptionAction {
        case none
        case cancel
        case request(Subscribers.Demand)
    }

    enum CompletionAction {
        case none
        /// Pass the completion downstream: upstream finished, or failed on its last attempt.
        case complete(Downstream)
        /// Ask `shouldRetry` and the backoff about retry number `retry`, then call ``decided(attempt:retrying:)``.
        case decide(retry: Int)
    }

    enum DecisionAction {
        case none
        /// Give up: pass the failure downstream.
        case fail(Downstream)
        /// Schedule the backoff timer of this generation.
        case arm(generation: UInt64)
    }

    private enum State {
        /// Attempt `attempt` subscribed upstream and waits for its subscription. Next: `.running`, `.terminal`.
        case subscribing(attempt: Int)
        /// Attempt `attempt` runs. Next: `.deciding`, `.terminal`.
        case running(attempt: Int, upstream: any Subscription)
        /// Attempt `attempt` failed; the owner consults `shouldRetry` outside the lock. Next: `.waiting`, `.terminal`.
        case deciding(attempt: Int)
        /// Waiting for the backoff timer before attempt `attempt`. Next: `.subscribing`, `.terminal`.
        case waiting(attempt: Int)
        /// Completed or cancelled. Final.
        case terminal
    }

    private let maxRetries: Int
    private var state = State.subscribing(attempt: 0)
    /// Released on completion or cancel.
    private var downstream: Downstream?
    /// The publisher each attempt subscribes to; released on completion or cancel, since a publisher
    /// that holds on to its subscribers would otherwise keep this subscription alive.
    private var upstreamPublisher: Upstream?
    private var demand = Subscribers.Demand.none
    private var retriesUsed = 0
    private var timer = TimerSlot()

    init(downstream: Downstream, upstream: Upstream, maxRetries: Int) {
        self.downstream = downstream
        upstreamPublisher = upstream
        self.maxRetries = maxRetries
    }

    /// Returns the publisher to subscribe attempt `attempt` to, if that attempt is due.
    func upstreamToSubscribe(attempt: Int) -> Upstream? {
        guard case .subscribing(attempt) = state else { return nil }
        return upstreamPublisher
    }

    mutating func subscriptionReceived(_ subscription: any Subscription, attempt: Int) -> SubscriptionAction {
        guard case .subscribing(attempt) = state else { return .cancel }
        state = .running(attempt: attempt, upstream: subscription)
        return demand > 0 ? .request(demand) : .none
    }

    /// Returns the downstream to deliver to, taking one from the demand, or `nil` to drop the value.
    mutating func valueReceived(attempt: Int) -> Downstream? {
        guard case .running(attempt, _) = state, demand > 0 else { return nil }
        demand -= 1
        return downstream
    }

    /// Downstream returned more demand from `receive(_:)`; it also goes upstream as the return value.
    mutating func demandReturned(_ additional: Subscribers.Demand) {
        if case .terminal = state { return }
        demand += additional
    }

    mutating func completionReceived(
        _ completion: Subscribers.Completion<Downstream.Failure>,
        attempt: Int
    ) -> CompletionAction {
        switch state {
        case .subscribing(attempt), .running(attempt, _):
            break
        default:
            return .none
        }
        guard case .failure = completion, retriesUsed < maxRetries else {
            return finish().map(CompletionAction.complete) ?? .none
        }
        state = .deciding(attempt: attempt)
        return .decide(retry: retriesUsed)
    }

    mutating func decided(attempt: Int, retrying: Bool) -> DecisionAction {
        guard case .deciding(attempt) = state else { return .none }
        guard retrying else { return finish().map(DecisionAction.fail) ?? .none }
        retriesUsed += 1
        state = .waiting(attempt: attempt + 1)
        return .arm(generation: timer.rearm().generation)
    }

    /// The scheduler returned the backoff timer; returns it back if it must be cancelled.
    mutating func timerScheduled(_ cancellable: any Cancellable, generation: UInt64) -> (any Cancellable)? {
        guard case .waiting = state else { return cancellable }
        return timer.scheduled(cancellable, generation: generation)
    }

    /// The backoff timer fired: returns the attempt to subscribe, the publisher to subscribe it to and the
    /// timer to cancel, if current.
    mutating func timerFired(generation: UInt64) -> (Int, Upstream, (any Cancellable)?)? {
        guard case .waiting(let attempt) = state, let upstreamPublisher else { return nil }
        let (isCurrent, cancellable) = timer.firedOnce(generation: generation)
        guard isCurrent else { return nil }
        state = .subscribing(attempt: attempt)
        return (attempt, upstreamPublisher, cancellable)
    }

    /// Adds demand; returns the running upstream to forward it to.
    mutating func demandRequested(_ additional: Subscribers.Demand) -> (any Subscription)? {
        switch state {
        case .terminal:
            return nil
        case .running(_, let upstream):
            demand += additional
            return upstream
        case .subscribing, .deciding, .waiting:
            demand += additional
            return nil
        }
    }

    /// Downstream cancelled: returns the upstream subscription and the timer to cancel.
    mutating func cancelled() -> ((any Subscription)?, (any Cancellable)?) {
        var upstream: (any Subscription)?
        if case .running(_, let current) = state { upstream = current }
        state = .terminal
        downstream = nil
        upstreamPublisher = nil
        return (upstream, timer.disarm())
    }

    /// Moves to `.terminal`; returns the downstream to complete.
    private mutating func finish() -> Downstream? {
        state = .terminal
        upstreamPublisher = nil
        defer { downstream = nil }
        return downstream
    }
}
