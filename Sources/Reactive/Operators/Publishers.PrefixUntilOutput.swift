extension Publisher {
    /// Republishes elements until another publisher emits an element.
    ///
    /// `publisher` is subscribed (asking for one value) first, before upstream, as in Combine; its
    /// first value cancels upstream and finishes the stream (so a `publisher` that has a value at
    /// once, such as `Just`, lets nothing through). A value it sends before upstream's subscription
    /// arrives counts too: the subscription is then cancelled and downstream receives a subscription
    /// and at once `.finished` (Combine sends `.finished` before the subscription; a subscriber
    /// cannot rely on that order, so Reactive keeps the subscription first). A `publisher` that
    /// completes without a value changes nothing, and whatever it sends after completing (a
    /// misbehaving publisher) is ignored, as in Combine.
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
            let inner = Inner<S>(downstream: subscriber)
            // The trigger first, as in Combine: it may fire before upstream's subscription arrives.
            other.subscribe(Trigger(owner: inner))
            upstream.subscribe(inner)
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
    fileprivate final class Inner<Downstream: Subscriber>: Subscriber, Subscription, CustomStringConvertible,
        @unchecked Sendable
    where Downstream.Input == Output, Downstream.Failure == Failure {
        // @unchecked Sendable: `machine` is only touched inside `lock`.
        typealias Input = Upstream.Output
        typealias Failure = Upstream.Failure

        private let lock = Lock()
        private var machine: PrefixUntilOutputStateMachine<Downstream>  // Guarded by lock.

        init(downstream: Downstream) {
            machine = PrefixUntilOutputStateMachine(downstream: downstream)
        }

        var description: String { "PrefixUntilOutput" }

        func receive(subscription: any Subscription) {
            switch lock.withLock({ machine.subscriptionReceived(subscription) }) {
            case .cancel:
                subscription.cancel()
                return
            case .handOver(let downstream):
                downstream.receive(subscription: self)
            case .handOverAndFinish(let downstream):
                // The trigger fired before this subscription arrived: the stream is already over.
                subscription.cancel()
                downstream.receive(subscription: self)
            }
            if let downstream = lock.withLock({ machine.handedOver() }) {
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
            upstream?.cancel()
            trigger?.cancel()
            downstream?.receive(completion: .finished)
        }

        fileprivate func triggerCompleted() {
            lock.withLock { machine.triggerCompleted() }
        }
    }

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
            // A trigger that ends without a value leaves the stream running, as in Combine; what it
            // sends after that is ignored.
            owner.triggerCompleted()
        }
    }
}

/// The states of a `prefix(untilOutputFrom:)` subscription: upstream's lifecycle, and the trigger's
/// beside it (the trigger is subscribed first, so it may fire before upstream's subscription).
///
/// **Thread safety:** value type; guarded by its owner's lock.
internal struct PrefixUntilOutputStateMachine<Downstream> {
    private enum State {
        /// Waiting for upstream's subscription. Next: `.forwarding`, `.firedBeforeSubscription`,
        /// `.terminal`.
        case awaitingSubscription(Downstream)
        /// Upstream runs; `handedOver` once downstream's `receive(subscription:)` returned.
        /// Next: `.firedDuringHandOver`, `.terminal`.
        case forwarding(upstream: any Subscription, downstream: Downstream, handedOver: Bool)
        /// The trigger fired before upstream's subscription arrived. Next: `.firedDuringHandOver`, `.terminal`.
        case firedBeforeSubscription(Downstream)
        /// The trigger fired while downstream was receiving its subscription: `.finished` follows
        /// once that returns. Next: `.terminal`.
        case firedDuringHandOver(Downstream)
        /// Finished or cancelled. Final.
        case terminal
    }

    /// The trigger's side.
    private enum TriggerState {
        /// Not subscribed yet. Next: `.subscribed`, `.done`.
        case awaiting
        /// Subscribed and asked for one value. Next: `.done`.
        case subscribed(any Subscription)
        /// Fired, completed, or no longer wanted. Final.
        case done
    }

    enum SubscriptionAction {
        case cancel
        case handOver(Downstream)
        /// Cancel upstream's subscription, hand downstream one, then finish it.
        case handOverAndFinish(Downstream)
    }

    private var state: State
    private var trigger = TriggerState.awaiting

    init(downstream: Downstream) {
        state = .awaitingSubscription(downstream)
    }

    mutating func subscriptionReceived(_ subscription: any Subscription) -> SubscriptionAction {
        switch state {
        case .awaitingSubscription(let downstream):
            state = .forwarding(upstream: subscription, downstream: downstream, handedOver: false)
            return .handOver(downstream)
        case .firedBeforeSubscription(let downstream):
            state = .firedDuringHandOver(downstream)
            return .handOverAndFinish(downstream)
        case .forwarding, .firedDuringHandOver, .terminal:
            return .cancel
        }
    }

    /// Downstream's `receive(subscription:)` returned: returns the downstream to finish now, if
    /// the trigger fired before.
    mutating func handedOver() -> Downstream? {
        switch state {
        case .forwarding(let upstream, let downstream, false):
            state = .forwarding(upstream: upstream, downstream: downstream, handedOver: true)
            return nil
        case .firedDuringHandOver(let downstream):
            state = .terminal
            return downstream
        case .awaitingSubscription, .forwarding, .firedBeforeSubscription, .terminal:
            return nil
        }
    }

    /// Returns whether to keep the trigger's subscription (and ask it for one value).
    mutating func triggerSubscribed(_ subscription: any Subscription) -> Bool {
        guard case .awaiting = trigger else { return false }
        switch state {
        case .awaitingSubscription, .forwarding:
            trigger = .subscribed(subscription)
            return true
        case .firedBeforeSubscription, .firedDuringHandOver, .terminal:
            trigger = .done
            return false
        }
    }

    mutating func triggerCompleted() {
        trigger = .done
    }

    func downstreamForValue() -> Downstream? {
        if case .forwarding(_, let downstream, _) = state { return downstream }
        return nil
    }

    func upstreamForDemand() -> (any Subscription)? {
        if case .forwarding(let upstream, _, _) = state { return upstream }
        return nil
    }

    mutating func upstreamCompleted() -> (Downstream, (any Subscription)?)? {
        guard case .forwarding(_, let downstream, _) = state else { return nil }
        state = .terminal
        return (downstream, takeTrigger())
    }

    /// The trigger sent a value: returns upstream to cancel, the downstream to finish now (`nil`
    /// while it has no subscription yet) and the trigger's subscription to cancel; `nil` if the
    /// value does not count (the trigger completed before, or the stream is over).
    mutating func triggerFired() -> ((any Subscription)?, Downstream?, (any Subscription)?)? {
        guard case .subscribed = trigger else { return nil }
        switch state {
        case .awaitingSubscription(let downstream):
            state = .firedBeforeSubscription(downstream)
            return (nil, nil, takeTrigger())
        case .forwarding(let upstream, let downstream, let handedOver):
            state = handedOver ? .terminal : .firedDuringHandOver(downstream)
            return (upstream, handedOver ? downstream : nil, takeTrigger())
        case .firedBeforeSubscription, .firedDuringHandOver, .terminal:
            return nil
        }
    }

    mutating func cancelled() -> ((any Subscription)?, (any Subscription)?) {
        defer { state = .terminal }
        let trigger = takeTrigger()
        if case .forwarding(let upstream, _, _) = state { return (upstream, trigger) }
        return (nil, trigger)
    }

    /// Ends the trigger's side; returns its subscription, to cancel, if it had one.
    private mutating func takeTrigger() -> (any Subscription)? {
        defer { trigger = .done }
        if case .subscribed(let subscription) = trigger { return subscription }
        return nil
    }
}
