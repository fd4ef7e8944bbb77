extension Publisher where Output: Publisher, Output.Failure == Failure {
    /// Republishes elements sent by the most recently received publisher.
    ///
    /// Each publisher the upstream sends replaces the previous one: the previous one is cancelled
    /// and its later elements are dropped. Downstream demand goes to the current publisher; a new
    /// one is asked for the demand still outstanding. The stream finishes when the upstream and the
    /// current publisher finished, and fails when either fails.
    ///
    ///     let outer = PassthroughSubject<PassthroughSubject<Int, Never>, Never>(), a = PassthroughSubject<Int, Never>()
    ///     let cancellable = outer.switchToLatest().sink { print($0) }
    ///     outer.send(a); a.send(1); outer.send(PassthroughSubject()); a.send(2)  // Prints: 1
    ///
    /// - Returns: A publisher of the elements of the latest publisher received.
    public func switchToLatest() -> Publishers.SwitchToLatest<Output, Self> {
        Publishers.SwitchToLatest(upstream: self)
    }
}

extension Publisher where Output: Publisher, Failure == Never {
    /// Republishes elements sent by the most recently received publisher, for an upstream that
    /// cannot fail whose publishers can.
    ///
    ///     let upstream = Just(Fail<Int, URLError>(error: URLError(.badURL)))
    ///     let cancellable = upstream.switchToLatest().sink(receiveCompletion: { print($0) }) { print($0) }
    ///     // Prints: failure(Error Domain=NSURLErrorDomain Code=-1000 "(null)")
    ///
    /// - Returns: A publisher of the elements of the latest publisher received.
    public func switchToLatest() -> Publishers.SwitchToLatest<Output, Publishers.SetFailureType<Self, Output.Failure>> {
        Publishers.SwitchToLatest(upstream: setFailureType(to: Output.Failure.self))
    }
}

extension Publisher where Output: Publisher, Failure == Never, Output.Failure == Never {
    /// Republishes elements sent by the most recently received publisher, when neither can fail.
    ///
    ///     let cancellable = [Just(1), Just(2)].publisher.switchToLatest()
    ///         .sink { print($0) }
    ///     // Prints: 1 2 (one per line)
    ///
    /// - Returns: A publisher of the elements of the latest publisher received.
    public func switchToLatest() -> Publishers.SwitchToLatest<Output, Self> {
        Publishers.SwitchToLatest(upstream: self)
    }
}

extension Publisher where Output: Publisher, Output.Failure == Never {
    /// Republishes elements sent by the most recently received publisher, for an upstream that can
    /// fail whose publishers cannot.
    ///
    ///     let upstream = [Just(1)].publisher.setFailureType(to: URLError.self)
    ///     let cancellable = upstream.switchToLatest().sink(receiveCompletion: { print($0) }) { print($0) }
    ///     // Prints: 1 finished (one per line)
    ///
    /// - Returns: A publisher of the elements of the latest publisher received.
    public func switchToLatest()
        -> Publishers.SwitchToLatest<
            Publishers.SetFailureType<Output, Failure>,
            Publishers.Map<Self, Publishers.SetFailureType<Output, Failure>>
        >
    {
        Publishers.SwitchToLatest(upstream: map { $0.setFailureType(to: Failure.self) })
    }
}

extension Publishers {
    /// A publisher that flattens nested publishers, republishing the elements of the latest one.
    ///
    /// **Ownership:** a value type; each subscription retains its subscriber, the upstream
    /// subscription and the current inner subscription until it completes or is cancelled.
    ///
    /// **Thread safety:** safe to subscribe from any thread; deliveries are serialized.
    public struct SwitchToLatest<P: Publisher, Upstream: Publisher>: Publisher
    where Upstream.Output == P, P.Failure == Upstream.Failure {
        public typealias Output = P.Output
        public typealias Failure = P.Failure

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// Creates a publisher that republishes the elements of the latest publisher `upstream` sent.
        public init(upstream: Upstream) {
            self.upstream = upstream
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let inner = SwitchToLatestInner<P, S>(downstream: subscriber)
            // Closures made here, where the types are concrete, keep the per-element path specialized.
            upstream.subscribe(
                RelaySubscriber<P, Failure>(
                    "SwitchToLatest",
                    onSubscription: { inner.receive(subscription: $0) },
                    onValue: { inner.receive($0) },
                    onCompletion: { inner.receive(completion: $0) }
                )
            )
        }
    }
}

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

/// The subscription `switchToLatest` hands downstream; the relay subscribers attached to the
/// upstream and to each inner publisher call its methods.
///
/// **Ownership:** retained by the upstream's relay, by the downstream and by the current child's
/// relay; releases the downstream and the upstream subscriptions on completion or cancel.
///
/// **Thread safety:** safe to call from any thread; deliveries are serialized.
internal final class SwitchToLatestInner<P: Publisher, Downstream: Subscriber>: Subscription,
    CustomStringConvertible, CustomReflectable, CustomPlaygroundDisplayConvertible, @unchecked Sendable
where P.Output == Downstream.Input, P.Failure == Downstream.Failure {
    // @unchecked Sendable: `machine` is only touched inside `lock`.
    typealias Input = P
    typealias Failure = P.Failure
    typealias Machine = SwitchToLatestStateMachine<Downstream>

    private let lock = Lock()
    private var machine: Machine  // Guarded by lock.

    init(downstream: Downstream) {
        machine = Machine(downstream: downstream)
    }

    var description: String { "SwitchToLatest" }

    var customMirror: Mirror { Mirror(self, children: []) }

    var playgroundDescription: Any { description }

    // MARK: Outer upstream

    func receive(subscription: any Subscription) {
        guard let downstream = lock.withLock({ machine.outerSubscribed(subscription) }) else {
            subscription.cancel()
            return
        }
        downstream.receive(subscription: self)
        subscription.request(.unlimited)
    }

    func receive(_ input: P) -> Subscribers.Demand {
        guard let (generation, previous) = lock.withLock({ machine.newInner() }) else { return .none }
        previous?.cancel()
        // Tagged with its generation, so that a replaced publisher's late calls are ignored.
        input.subscribe(
            RelaySubscriber<P.Output, Failure>(
                "SwitchToLatest",
                onSubscription: { self.childSubscribed(generation: generation, $0) },
                onValue: {
                    self.childReceived(generation: generation, $0)
                    return .none
                },
                onCompletion: { self.childCompleted(generation: generation, $0) }
            )
        )
        return .none
    }

    func receive(completion: Subscribers.Completion<Failure>) {
        perform(lock.withLock { machine.outerCompleted(completion) })
    }

    // MARK: Downstream

    func request(_ demand: Subscribers.Demand) {
        perform(lock.withLock { machine.requested(demand) })
    }

    func cancel() {
        perform(lock.withLock { machine.cancelled() })
    }

    // MARK: Children

    func childSubscribed(generation: Int, _ subscription: any Subscription) {
        perform(lock.withLock { machine.childSubscribed(generation: generation, subscription) })
    }

    func childReceived(generation: Int, _ value: Downstream.Input) {
        perform(lock.withLock { machine.childReceived(generation: generation, value) })
    }

    func childCompleted(generation: Int, _ completion: Subscribers.Completion<Failure>) {
        perform(lock.withLock { machine.childCompleted(generation: generation, completion) })
    }

    private func perform(_ action: Machine.Action) {
        switch action {
        case .none:
            break
        case .request(let subscription, let demand):
            subscription.request(demand)
        case .cancel(let subscription):
            subscription.cancel()
        case .cancelAll(let subscriptions):
            for subscription in subscriptions { subscription.cancel() }
        case .deliver(let downstream, let value):
            deliver(value, to: downstream)
        case .complete(let downstream, let completion, let subscriptions):
            for subscription in subscriptions { subscription.cancel() }
            downstream.receive(completion: completion)
        }
    }

    /// The delivery loop: one thread at a time runs it, so downstream calls never overlap.
    private func deliver(_ first: Downstream.Input, to downstream: Downstream) {
        var additional = downstream.receive(first)
        while true {
            switch lock.withLock({ machine.delivered(additional) }) {
            case .deliver(let value):
                additional = downstream.receive(value)
            case .forward(let subscription, let demand):
                subscription.request(demand)
                additional = .none
            case .complete(let completion, let subscriptions):
                for subscription in subscriptions { subscription.cancel() }
                downstream.receive(completion: completion)
                return
            case .stop:
                return
            }
        }
    }
}
