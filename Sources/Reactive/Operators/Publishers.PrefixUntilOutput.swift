extension Publisher {
    /// Republishes elements until another publisher emits an element.
    ///
    /// `publisher` is subscribed (asking for one value) when upstream's subscription arrives, before
    /// downstream receives its own; its first value cancels upstream and finishes the stream (so a
    /// `publisher` that has a value at once, such as `Just`, lets nothing through). A `publisher` that
    /// completes without a value changes nothing.
    ///
    ///     let numbers = PassthroughSubject<Int, Never>(), stop = PassthroughSubject<Void, Never>()
    ///     let c = numbers.prefix(untilOutputFrom: stop).sink(receiveCompletion: { print($0) }, receiveValue: { print($0) })
    ///     numbers.send(1); stop.send(()); numbers.send(2)
    ///     // Prints: 1 finished (one per line)
    ///
    /// - Parameter publisher: A second publisher.
    /// - Returns: A publisher that republishes elements until the second publisher publishes an element.
    public func prefix<P: Publisher>(untilOutputFrom publisher: P) -> Publishers.PrefixUntilOutput<Self, P> {
        Publishers.PrefixUntilOutput(upstream: self, other: publisher)
    }
}

extension Publishers {
    /// A publisher that republishes elements until another publisher emits an element.
    ///
    /// **Ownership:** a value; each subscription holds both upstreams until the stream ends.
    ///
    /// **Thread safety:** value type; its subscriptions are safe to call from any thread.
    public struct PrefixUntilOutput<Upstream: Publisher, Other: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher that this publisher receives elements from.
        public let upstream: Upstream

        /// Another publisher, whose first output causes this publisher to finish.
        public let other: Other

        /// Creates a publisher that republishes `upstream`'s elements until `other` emits one.
        public init(upstream: Upstream, other: Other) {
            self.upstream = upstream
            self.other = other
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.subscribe(Inner(downstream: subscriber, other: other))
        }
    }
}

extension Publishers.PrefixUntilOutput {
    /// The subscription of `prefix(untilOutputFrom:)`: forwards upstream while the trigger is silent.
    ///
    /// **Ownership:** retained by upstream and by downstream; retains the trigger's subscription. Both
    /// upstreams and the downstream are released when the stream ends.
    ///
    /// **Thread safety:** safe to call from any thread.
    private final class Inner<Downstream: Subscriber>: Subscriber, Subscription, CustomStringConvertible,
        @unchecked Sendable
    where Downstream.Input == Output, Downstream.Failure == Failure {
        // @unchecked Sendable: `machine` is only touched inside `lock`.
        typealias Input = Upstream.Output
        typealias Failure = Upstream.Failure

        private let lock = Lock()
        private var machine: PrefixUntilOutputStateMachine<Downstream>  // Guarded by lock.
        private var other: Other?  // Guarded by lock; subscribed once, then released.

        init(downstream: Downstream, other: Other) {
            machine = PrefixUntilOutputStateMachine(downstream: downstream)
            self.other = other
        }

        var description: String { "PrefixUntilOutput" }

        func receive(subscription: any Subscription) {
            let accepted = lock.withLock { () -> (Downstream, Other)? in
                guard let downstream = machine.subscriptionReceived(subscription), let other = other.take() else {
                    return nil
                }
                return (downstream, other)
            }
            guard let (downstream, other) = accepted else {
                subscription.cancel()
                return
            }
            other.subscribe(Trigger(owner: self))
            downstream.receive(subscription: self)
            if lock.withLock({ machine.handedOver() }) {
                // The trigger fired before downstream had its subscription: it finishes now.
                downstream.receive(completion: .finished)
            }
        }

        func receive(_ input: Input) -> Subscribers.Demand {
            guard let downstream = lock.withLock({ machine.downstreamForValue() }) else { return .none }
            return downstream.receive(input)
        }

        func receive(completion: Subscribers.Completion<Failure>) {
            guard let (downstream, trigger) = lock.withLock({ machine.upstreamCompleted() }) else { return }
            trigger?.cancel()
            downstream.receive(completion: completion)
        }

        func request(_ demand: Subscribers.Demand) {
            lock.withLock { machine.upstreamForDemand() }?.request(demand)
        }

        func cancel() {
            let (upstream, trigger) = lock.withLock { machine.cancelled() }
            upstream?.cancel()
            trigger?.cancel()
        }

        fileprivate func triggerSubscribed(_ subscription: any Subscription) {
            if lock.withLock({ machine.triggerSubscribed(subscription) }) {
                subscription.request(.max(1))
            } else {
                subscription.cancel()
            }
        }

        fileprivate func triggerFired() {
            guard let (upstream, downstream, trigger) = lock.withLock({ machine.triggerFired() }) else { return }
            upstream.cancel()
            trigger?.cancel()
            downstream?.receive(completion: .finished)
        }
    }

    /// The subscriber of the other publisher: reports its first value to the owner.
    private struct Trigger<Downstream: Subscriber>: Subscriber, CustomStringConvertible
    where Downstream.Input == Output, Downstream.Failure == Failure {
        typealias Input = Other.Output
        typealias Failure = Other.Failure

        let combineIdentifier = CombineIdentifier()
        let owner: Inner<Downstream>

        var description: String { "PrefixUntilOutput" }

        func receive(subscription: any Subscription) {
            owner.triggerSubscribed(subscription)
        }

        func receive(_ input: Input) -> Subscribers.Demand {
            owner.triggerFired()
            return .none
        }

        func receive(completion: Subscribers.Completion<Failure>) {
            // A trigger that ends without a value leaves the stream running, as in Combine.
        }
    }
}

/// The states of a `prefix(untilOutputFrom:)` subscription.
///
/// **Thread safety:** value type; guarded by its owner's lock.
internal struct PrefixUntilOutputStateMachine<Downstream> {
    private enum State {
        /// No upstream subscription yet. Next: `.forwarding`, `.terminal`.
        case awaitingSubscription(Downstream)
        /// Forwarding upstream; `trigger` once the other publisher's subscription arrived; `handedOver`
        /// once downstream has its subscription. Next: `.triggeredEarly`, `.terminal`.
        case forwarding(
            upstream: any Subscription,
            downstream: Downstream,
            trigger: (any Subscription)?,
            handedOver: Bool
        )
        /// The trigger fired before downstream had its subscription; it finishes once it has. Next: `.terminal`.
        case triggeredEarly
        /// Finished, failed or cancelled; everything released. Final.
        case terminal
    }

    private var state: State

    init(downstream: Downstream) {
        state = .awaitingSubscription(downstream)
    }

    mutating func subscriptionReceived(_ subscription: any Subscription) -> Downstream? {
        guard case .awaitingSubscription(let downstream) = state else { return nil }
        state = .forwarding(upstream: subscription, downstream: downstream, trigger: nil, handedOver: false)
        return downstream
    }

    /// Downstream has its subscription. Returns whether it must now be finished (the trigger fired first).
    mutating func handedOver() -> Bool {
        switch state {
        case .forwarding(let upstream, let downstream, let trigger, _):
            state = .forwarding(upstream: upstream, downstream: downstream, trigger: trigger, handedOver: true)
            return false
        case .triggeredEarly:
            state = .terminal
            return true
        case .awaitingSubscription, .terminal:
            return false
        }
    }

    /// Returns whether to keep the trigger's subscription (and ask it for a value).
    mutating func triggerSubscribed(_ subscription: any Subscription) -> Bool {
        guard case .forwarding(let upstream, let downstream, nil, let handedOver) = state else { return false }
        state = .forwarding(upstream: upstream, downstream: downstream, trigger: subscription, handedOver: handedOver)
        return true
    }

    func downstreamForValue() -> Downstream? {
        if case .forwarding(_, let downstream, _, _) = state { return downstream }
        return nil
    }

    func upstreamForDemand() -> (any Subscription)? {
        if case .forwarding(let upstream, _, _, _) = state { return upstream }
        return nil
    }

    mutating func upstreamCompleted() -> (Downstream, (any Subscription)?)? {
        guard case .forwarding(_, let downstream, let trigger, _) = state else { return nil }
        state = .terminal
        return (downstream, trigger)
    }

    /// The trigger fired: returns what to cancel, and whom to finish (`nil` before hand-over).
    mutating func triggerFired() -> (any Subscription, Downstream?, (any Subscription)?)? {
        guard case .forwarding(let upstream, let downstream, let trigger, let handedOver) = state else { return nil }
        state = handedOver ? .terminal : .triggeredEarly
        return (upstream, handedOver ? downstream : nil, trigger)
    }

    mutating func cancelled() -> ((any Subscription)?, (any Subscription)?) {
        defer { state = .terminal }
        if case .forwarding(let upstream, _, let trigger, _) = state { return (upstream, trigger) }
        return (nil, nil)
    }
}
