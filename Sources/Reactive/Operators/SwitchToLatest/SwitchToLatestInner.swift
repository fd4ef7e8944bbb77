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
