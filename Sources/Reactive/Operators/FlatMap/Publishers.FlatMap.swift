extension Publisher {
    /// Transforms all elements from an upstream publisher into a new publisher up to a maximum
    /// number of publishers you specify, and publishes their elements as they arrive.
    ///
    /// The upstream is asked for `maxPublishers` elements at first, and for one more each time one
    /// of the publishers made from them finishes; so at most `maxPublishers` of them are live at
    /// once (`.max(1)` runs them one after another). Their elements are delivered one at a time,
    /// as downstream demand allows. The stream finishes when the upstream and every inner publisher
    /// finished, and fails on the first failure, cancelling the rest.
    ///
    ///     let cancellable = [1, 2, 3].publisher.flatMap { n in [n, n * 10].publisher }
    ///         .sink { print($0) }
    ///     // Prints: 1 10 2 20 3 30 (one per line)
    ///
    /// - Parameters:
    ///   - maxPublishers: The most inner publishers live at once; `.unlimited` by default.
    ///   - transform: A closure that makes a publisher from an element.
    /// - Returns: A publisher of the elements of the publishers `transform` makes.
    @inlinable
    public func flatMap<T, P: Publisher>(
        maxPublishers: Subscribers.Demand = .unlimited,
        _ transform: @escaping (Output) -> P
    ) -> Publishers.FlatMap<P, Self> where T == P.Output, Failure == P.Failure {
        Publishers.FlatMap(upstream: self, maxPublishers: maxPublishers, transform: transform)
    }
}

extension Publisher where Failure == Never {
    /// Transforms all elements of a publisher that cannot fail into publishers that cannot fail
    /// either, and publishes their elements as they arrive.
    ///
    ///     let cancellable = Just(2).flatMap { n in Just(n * 21) }
    ///         .sink { print($0) }
    ///     // Prints: 42
    ///
    /// - Parameters:
    ///   - maxPublishers: The most inner publishers live at once; `.unlimited` by default.
    ///   - transform: A closure that makes a publisher from an element.
    /// - Returns: A publisher of the elements of the publishers `transform` makes.
    @inlinable
    public func flatMap<P: Publisher>(
        maxPublishers: Subscribers.Demand = .unlimited,
        _ transform: @escaping (Output) -> P
    ) -> Publishers.FlatMap<P, Self> where P.Failure == Never {
        Publishers.FlatMap(upstream: self, maxPublishers: maxPublishers, transform: transform)
    }
}

extension Publisher where Failure == Never {
    /// Transforms all elements of a publisher that cannot fail into publishers that can, and
    /// publishes their elements as they arrive; the upstream takes on the publishers' failure type.
    ///
    ///     let cancellable = Just(4).flatMap { n in Fail<Int, URLError>(error: URLError(.badURL)) }
    ///         .sink(receiveCompletion: { print($0) }, receiveValue: { print($0) })
    ///     // Prints: failure(Error Domain=NSURLErrorDomain Code=-1000 "(null)")
    ///
    /// - Parameters:
    ///   - maxPublishers: The most inner publishers live at once; `.unlimited` by default.
    ///   - transform: A closure that makes a publisher from an element.
    /// - Returns: A publisher of the elements of the publishers `transform` makes.
    @inlinable
    public func flatMap<P: Publisher>(
        maxPublishers: Subscribers.Demand = .unlimited,
        _ transform: @escaping (Output) -> P
    ) -> Publishers.FlatMap<P, Publishers.SetFailureType<Self, P.Failure>> {
        Publishers.FlatMap(
            upstream: setFailureType(to: P.Failure.self),
            maxPublishers: maxPublishers,
            transform: transform
        )
    }
}

extension Publisher {
    /// Transforms all elements of a publisher into publishers that cannot fail, and publishes their
    /// elements as they arrive; the inner publishers take on the upstream's failure type.
    ///
    ///     let cancellable = [1, 2].publisher.setFailureType(to: URLError.self).flatMap { Just($0 * 2) }
    ///         .sink(receiveCompletion: { print($0) }, receiveValue: { print($0) })
    ///     // Prints: 2 4 finished (one per line)
    ///
    /// - Parameters:
    ///   - maxPublishers: The most inner publishers live at once; `.unlimited` by default.
    ///   - transform: A closure that makes a publisher from an element.
    /// - Returns: A publisher of the elements of the publishers `transform` makes.
    @inlinable
    public func flatMap<P: Publisher>(
        maxPublishers: Subscribers.Demand = .unlimited,
        _ transform: @escaping (Output) -> P
    ) -> Publishers.FlatMap<Publishers.SetFailureType<P, Failure>, Self> where P.Failure == Never {
        Publishers.FlatMap(upstream: self, maxPublishers: maxPublishers) {
            transform($0).setFailureType(to: Failure.self)
        }
    }
}

extension Publishers {
    /// A publisher that transforms elements from an upstream publisher into new publishers and
    /// publishes their elements.
    ///
    /// **Ownership:** a value type; each subscription retains its subscriber, the transform, and
    /// the upstream and inner subscriptions until it completes or is cancelled.
    ///
    /// **Thread safety:** safe to subscribe from any thread; deliveries are serialized.
    public struct FlatMap<NewPublisher: Publisher, Upstream: Publisher>: Publisher
    where NewPublisher.Failure == Upstream.Failure {
        public typealias Output = NewPublisher.Output
        public typealias Failure = Upstream.Failure

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// The maximum number of concurrent publisher subscriptions.
        public let maxPublishers: Subscribers.Demand

        /// A closure that takes an element as a parameter and returns a publisher that produces
        /// elements of that type.
        public let transform: (Upstream.Output) -> NewPublisher

        /// Creates a publisher that transforms elements from an upstream publisher into new publishers.
        @inlinable
        public init(
            upstream: Upstream,
            maxPublishers: Subscribers.Demand,
            transform: @escaping (Upstream.Output) -> NewPublisher
        ) {
            self.upstream = upstream
            self.maxPublishers = maxPublishers
            self.transform = transform
        }

        @inlinable
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let inner = FlatMapInner(downstream: subscriber, maxPublishers: maxPublishers, name: "FlatMap")
            let transform = transform
            // Closures made here, where the types are concrete, keep the per-element path specialized.
            let outer = RelaySubscriber<Upstream.Output, Failure>(
                "FlatMap",
                onSubscription: { inner.outerSubscribed($0) },
                onValue: { value in
                    inner.addChild(transform(value))
                    return .none
                },
                onCompletion: { inner.outerCompleted($0) }
            )
            upstream.subscribe(outer)
        }
    }
}

/// The subscription `flatMap` and `merge` hand downstream: it owns the ``FlatMapStateMachine``,
/// subscribes to the inner publishers, and carries out the machine's actions.
///
/// **Ownership:** retained by the downstream subscriber, by the outer subscriber and by every
/// child subscriber; releases the downstream and all upstream subscriptions on completion or cancel.
///
/// **Thread safety:** safe to call from any thread; deliveries are serialized.
@usableFromInline
internal final class FlatMapInner<Downstream: Subscriber>: Subscription, CustomStringConvertible,
    CustomReflectable, CustomPlaygroundDisplayConvertible, @unchecked Sendable
{
    // @unchecked Sendable: `machine` is only touched inside `lock`; `name` is immutable.
    @usableFromInline typealias Machine = FlatMapStateMachine<Downstream>

    @usableFromInline let lock = Lock()
    // The lock makes every access exclusive, so the dynamic exclusivity check (a runtime call per
    // access) is off.
    @usableFromInline @exclusivity(unchecked) var machine: Machine  // Guarded by lock.
    @usableFromInline let name: String  // Immutable.

    @usableFromInline let maxPublishers: Subscribers.Demand  // Immutable.

    @inlinable
    init(downstream: Downstream, maxPublishers: Subscribers.Demand, name: String) {
        machine = Machine(downstream: downstream, maxPublishers: maxPublishers)
        self.name = name
        self.maxPublishers = maxPublishers
        // Made here (called where the types are concrete) so that children reach specialized code.
        machine.installChildRelay(
            FlatMapChildRelay(
                onSubscription: { self.childSubscribed(slot: $0, $1) },
                onValue: { self.childReceived(slot: $0, $1) },
                onCompletion: { self.childCompleted(slot: $0, $1) }
            )
        )
    }

    @inlinable
    var description: String { name }

    @inlinable
    var customMirror: Mirror { Mirror(self, children: []) }

    @inlinable
    var playgroundDescription: Any { description }

    @inlinable
    func request(_ demand: Subscribers.Demand) {
        let action = lock.withLock { machine.requested(demand) }
        perform(consume action)
    }

    @inlinable
    func cancel() {
        let action = lock.withLock { machine.cancelled() }
        perform(consume action)
    }

    // MARK: Outer upstream

    /// Stores the outer subscription, hands this subscription downstream, and asks the upstream
    /// for `maxPublishers`; cancels a subscription that is not wanted.
    @inlinable
    func outerSubscribed(_ subscription: any Subscription) {
        guard let downstream = lock.withLock({ machine.outerSubscribed(subscription) }) else {
            subscription.cancel()
            return
        }
        downstream.receive(subscription: self)
        if maxPublishers > 0 {
            subscription.request(maxPublishers)
        }
    }

    @inlinable
    func outerCompleted(_ completion: Subscribers.Completion<Downstream.Failure>) {
        let action = lock.withLock { machine.outerCompleted(completion) }
        perform(consume action)
    }

    /// Subscribes to a new inner publisher, unless the stream is over.
    @inlinable
    func addChild<P: Publisher>(_ publisher: P) where P.Output == Downstream.Input, P.Failure == Downstream.Failure {
        // A `Just` would take its value and finish inside `subscribe`, as soon as it is asked: the
        // same transitions happen in one step, without a child subscriber or a subscription. The
        // cast is decided at compile time wherever `P` is concrete.
        if let just = publisher as? Just<Downstream.Input> {
            addImmediateChild(just.output)
            return
        }
        // What `flatMap` makes of a `Just` under an upstream that can fail.
        if let just = publisher as? Publishers.SetFailureType<Just<Downstream.Input>, Downstream.Failure> {
            addImmediateChild(just.upstream.output)
            return
        }
        guard let (slot, relay) = lock.withLock({ machine.childAdded() }) else { return }
        publisher.subscribe(FlatMapChild(relay: relay, slot: slot))
    }

    /// Adds a child that sends `value` and finishes as soon as it is subscribed (see
    /// ``FlatMapStateMachine/immediateChildArrived(_:)``).
    @inlinable
    func addImmediateChild(_ value: Downstream.Input) {
        let action = lock.withLock { machine.immediateChildArrived(value) }
        switch consume action {
        case .deliver(let downstream):
            deliver(value, to: downstream, thenRequestOneFrom: .empty)
            // With unlimited publishers a finished child asks for nothing, and the stream cannot
            // be done while its outer upstream is sending (the delivery loop would have finished it).
            if maxPublishers != .unlimited, let followUp = lock.withLock({ machine.immediateChildFinished() }) {
                perform(followUp)
            }
        case .followUp(let followUp):
            perform(consume followUp)
        }
    }

    // MARK: Children

    @inlinable
    func childSubscribed(slot: Int, _ subscription: any Subscription) {
        if let demand = lock.withLock({ machine.childSubscribed(slot: slot, subscription) }) {
            subscription.request(demand)
        } else {
            subscription.cancel()
        }
    }

    @inlinable
    func childReceived(slot: Int, _ value: Downstream.Input) -> Subscribers.Demand {
        guard let (downstream, requestOneMore) = lock.withLock({ machine.childReceived(slot: slot, value) }) else {
            return .none
        }
        deliver(value, to: downstream, thenRequestOneFrom: .empty)
        return requestOneMore ? .max(1) : .none
    }

    @inlinable
    func childCompleted(slot: Int, _ completion: Subscribers.Completion<Downstream.Failure>) {
        if let action = lock.withLock({ machine.childCompleted(slot: slot, completion) }) {
            perform(action)
        }
    }

    // MARK: Actions

    @inlinable
    func perform(_ action: consuming Machine.Action) {
        switch consume action {
        case .none:
            break
        case .request(let subscription, let demand):
            subscription.request(demand)
        case .cancel(let subscription):
            subscription.cancel()
        case .cancelAll(let subscriptions):
            for subscription in subscriptions { subscription.cancel() }
        case .deliverQueued(let downstream, let value, let child):
            deliver(value, to: downstream, thenRequestOneFrom: child)
        case .complete(let downstream, let completion, let subscriptions):
            for subscription in subscriptions { subscription.cancel() }
            downstream.receive(completion: completion)
        }
    }

    /// The delivery loop: one thread at a time runs it, so downstream calls never overlap, and
    /// values or demand arriving re-entrantly are picked up here instead of recursing.
    @inlinable
    func deliver(
        _ first: Downstream.Input,
        to downstream: Downstream,
        thenRequestOneFrom child: FlatMapChildSubscription
    ) {
        var additional = downstream.receive(first)
        child.requestOne()
        while true {
            let action = lock.withLock { machine.delivered(additional) }
            switch consume action {
            case .deliver(let value, let child):
                additional = downstream.receive(value)
                child.requestOne()
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

/// The callbacks every child subscriber of one `flatMap` or `merge` subscription calls, made by
/// ``FlatMapInner`` where the types are concrete, so that each child value runs specialized code.
///
/// **Ownership:** retained by the inner until it ends and by every child; retains the inner.
///
/// **Thread safety:** immutable; its closures are safe to call from any thread.
@usableFromInline
internal final class FlatMapChildRelay<Input, Failure: Error> {
    @usableFromInline let onSubscription: (Int, any Subscription) -> Void  // Immutable.
    @usableFromInline let onValue: (Int, Input) -> Subscribers.Demand  // Immutable.
    @usableFromInline let onCompletion: (Int, Subscribers.Completion<Failure>) -> Void  // Immutable.

    @inlinable
    init(
        onSubscription: @escaping (Int, any Subscription) -> Void,
        onValue: @escaping (Int, Input) -> Subscribers.Demand,
        onCompletion: @escaping (Int, Subscribers.Completion<Failure>) -> Void
    ) {
        self.onSubscription = onSubscription
        self.onValue = onValue
        self.onCompletion = onCompletion
    }
}

/// The subscriber `flatMap` and `merge` attach to each inner publisher: it tags every call with
/// its slot and passes it to the relay.
///
/// **Ownership:** retained by that publisher's subscription; retains the relay (and so the inner).
///
/// **Thread safety:** forwards every call to the relay, which is safe from any thread.
@usableFromInline
internal final class FlatMapChild<Input, Failure: Error>: Subscriber, CustomStringConvertible {
    @usableFromInline let relay: FlatMapChildRelay<Input, Failure>  // Immutable.
    @usableFromInline let slot: Int  // Immutable.

    @inlinable
    init(relay: FlatMapChildRelay<Input, Failure>, slot: Int) {
        self.relay = relay
        self.slot = slot
    }

    @inlinable
    var description: String { "FlatMap" }

    @inlinable
    func receive(subscription: any Subscription) {
        relay.onSubscription(slot, subscription)
    }

    @inlinable
    func receive(_ input: Input) -> Subscribers.Demand {
        relay.onValue(slot, input)
    }

    @inlinable
    func receive(completion: Subscribers.Completion<Failure>) {
        relay.onCompletion(slot, completion)
    }
}
