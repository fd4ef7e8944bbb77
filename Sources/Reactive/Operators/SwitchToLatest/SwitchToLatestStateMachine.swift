/// The state of one `switchToLatest` subscription: the outer upstream, the current inner publisher
/// (identified by a generation that grows with each switch), the outstanding demand and who is
/// delivering.
///
/// **Ownership:** owned by ``SwitchToLatestInner``; holds the downstream and the upstream
/// subscriptions until it becomes terminal, then drops them.
///
/// **Thread safety:** value type; every event runs under the inner's lock.
internal struct SwitchToLatestStateMachine<Downstream: Subscriber> {
    typealias Output = Downstream.Input
    typealias Failure = Downstream.Failure

    enum State {
        /// Nobody is delivering. Next: `.delivering`, `.terminal`.
        case idle
        /// One thread is inside the downstream's `receive(_:)`; values of the current inner that
        /// arrive meanwhile are queued for its loop. Next: `.idle`, `.terminal`.
        case delivering(pendingFailure: Failure?)
        /// Completed or cancelled; everything is released. Next: none.
        case terminal
    }

    /// The current inner publisher.
    struct Current {
        var generation: Int
        var subscription: (any Subscription)?
        var finished = false
    }

    enum Action {
        case none
        case request(any Subscription, Subscribers.Demand)
        case cancel(any Subscription)
        case cancelAll([any Subscription])
        case deliver(Downstream, Output)
        case complete(Downstream, Subscribers.Completion<Failure>, cancel: [any Subscription])
    }

    enum DeliveryAction {
        case deliver(Output)
        /// Forward this extra demand to the current inner, then ask again.
        case forward(any Subscription, Subscribers.Demand)
        case complete(Subscribers.Completion<Failure>, cancel: [any Subscription])
        case stop
    }

    private var state: State = .idle
    private var downstream: Downstream?
    private var outer: (any Subscription)?
    private var outerFinished = false
    private var current: Current?
    private var generation = 0
    private var queue = RingQueue<Output>()
    private var demand = Subscribers.Demand.none

    init(downstream: Downstream) {
        self.downstream = downstream
    }

    private var isTerminal: Bool {
        if case .terminal = state { return true }
        return false
    }

    /// Returns the downstream to hand the subscription to, or `nil` when it is not wanted.
    mutating func outerSubscribed(_ subscription: any Subscription) -> Downstream? {
        guard !isTerminal, outer == nil, !outerFinished else { return nil }
        outer = subscription
        return downstream
    }

    /// A new inner publisher arrived: returns its generation (or `nil` after the end) and the
    /// previous inner's subscription, to cancel.
    mutating func newInner() -> (generation: Int, previous: (any Subscription)?)? {
        guard !isTerminal else { return nil }
        generation += 1
        let previous = current?.subscription
        current = Current(generation: generation)
        // Values of the previous inner that wait are dropped with it.
        queue.removeAll()
        return (generation, previous)
    }

    mutating func outerCompleted(_ completion: Subscribers.Completion<Failure>) -> Action {
        guard !isTerminal else { return .none }
        outer = nil
        outerFinished = true
        switch completion {
        case .finished:
            return finishIfDone()
        case .failure(let error):
            return fail(error)
        }
    }

    mutating func childSubscribed(generation: Int, _ subscription: any Subscription) -> Action {
        guard !isTerminal, var current, current.generation == generation, current.subscription == nil else {
            return .cancel(subscription)
        }
        current.subscription = subscription
        self.current = current
        return demand > 0 ? .request(subscription, demand) : .none
    }

    mutating func childReceived(generation: Int, _ value: Output) -> Action {
        guard !isTerminal, current?.generation == generation else { return .none }
        if case .idle = state, demand > 0, let downstream {
            demand -= 1
            state = .delivering(pendingFailure: nil)
            return .deliver(downstream, value)
        }
        queue.append(value)
        return .none
    }

    mutating func childCompleted(generation: Int, _ completion: Subscribers.Completion<Failure>) -> Action {
        guard !isTerminal, current?.generation == generation else { return .none }
        current?.subscription = nil
        current?.finished = true
        switch completion {
        case .finished:
            return finishIfDone()
        case .failure(let error):
            return fail(error)
        }
    }

    mutating func requested(_ newDemand: Subscribers.Demand) -> Action {
        guard newDemand > 0 else { apiViolation("demand must be greater than zero, got \(newDemand)") }
        guard !isTerminal else { return .none }
        demand += newDemand
        if case .idle = state, let downstream, let value = queue.popFirst() {
            demand -= 1
            state = .delivering(pendingFailure: nil)
            return .deliver(downstream, value)
        }
        guard let subscription = current?.subscription else { return .none }
        return .request(subscription, newDemand)
    }

    mutating func cancelled() -> Action {
        guard !isTerminal else { return .none }
        let subscriptions = upstreams()
        enterTerminal()
        return .cancelAll(subscriptions)
    }

    mutating func delivered(_ additional: Subscribers.Demand) -> DeliveryAction {
        guard case .delivering(let pendingFailure) = state else { return .stop }
        if let pendingFailure {
            enterTerminal()
            return .complete(.failure(pendingFailure), cancel: [])
        }
        if additional > 0 {
            demand += additional
            if let subscription = current?.subscription {
                return .forward(subscription, additional)
            }
        }
        if demand > 0, let value = queue.popFirst() {
            demand -= 1
            return .deliver(value)
        }
        if isDone {
            enterTerminal()
            return .complete(.finished, cancel: [])
        }
        state = .idle
        return .stop
    }

    private var isDone: Bool {
        outerFinished && current?.finished != false && queue.isEmpty
    }

    private mutating func finishIfDone() -> Action {
        guard case .idle = state, isDone, let downstream else { return .none }
        enterTerminal()
        return .complete(downstream, .finished, cancel: [])
    }

    private mutating func fail(_ error: Failure) -> Action {
        let subscriptions = upstreams()
        if case .delivering(let pendingFailure) = state {
            guard pendingFailure == nil else { return .none }
            outer = nil
            current = nil
            queue.removeAll()
            state = .delivering(pendingFailure: error)
            return .cancelAll(subscriptions)
        }
        guard let downstream else { internalInconsistency("idle without a downstream") }
        enterTerminal()
        return .complete(downstream, .failure(error), cancel: subscriptions)
    }

    private func upstreams() -> [any Subscription] {
        [outer, current?.subscription].compactMap { $0 }
    }

    private mutating func enterTerminal() {
        state = .terminal
        downstream = nil
        outer = nil
        current = nil
        queue.removeAll()
    }
}
