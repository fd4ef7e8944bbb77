import Synchronization

extension Publisher {
    /// Transforms all elements from an upstream publisher into a new publisher up to a maximum
    /// number of publishers you specify, and publishes their elements as they arrive.
    ///
    /// The upstream is asked for `maxPublishers` elements at first, and for one more each time one
    /// of the publishers made from them finishes; so at most `maxPublishers` of them are live at
    /// once (`.max(1)` runs them one after another). Their elements are delivered one at a time,
    /// as downstream demand allows: each publisher is asked for one element at a time, or for
    /// `.unlimited` while downstream's demand is (and from the moment it becomes) `.unlimited`, as in
    /// Combine. The stream finishes when the upstream and every inner publisher finished (a publisher
    /// counts from the moment it is subscribed to, even if the upstream finishes from inside that
    /// `subscribe`), and fails on the first failure, cancelling the rest. An element the upstream
    /// sends after it completed (a misbehaving upstream) is ignored, as in Combine: `transform` is not
    /// called for it. A demand of zero traps, as in Combine (an API violation).
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
                    // A value after the upstream's completion (a misbehaving upstream) makes no
                    // publisher: Combine neither transforms nor subscribes to it.
                    if inner.outerEnded { return .none }
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
    #if SPOUT_CHECKED_EXCLUSIVITY
        @usableFromInline var machine: Machine  // Guarded by lock.
    #else
        // Unchecked: bench/reactive.sh `flatmap`, `flatmap-optional` (every child).
        @usableFromInline @exclusivity(unchecked) var machine: Machine  // Guarded by lock.
    #endif
    @usableFromInline let name: String  // Immutable.

    /// The lock-free path for a `Just` child's value (bench/reactive.sh `flatmap`), used while
    /// downstream demand is unlimited, nothing waits and `maxPublishers` is unlimited: one of the
    /// ``FastPath`` constants. While it is `lent` or `delivering`, the machine is `.idle` with that
    /// demand and nothing queued, and a thread that swaps `lent` for `delivering` holds the delivery
    /// right without the lock, and delivers through ``fastDownstream``. Only a thread holding the lock
    /// lends the machine (`off` to `lent`, in ``settleFastPath()``) or takes it back
    /// (``revokeFastPath()``), before every event: so every other step sees the machine as before.
    @usableFromInline let fast = Atomic<Int>(FastPath.off)
    /// The subscriber for the lock-free path, in a box this subscription owns by hand (see
    /// ``DownstreamBox``), so that a value reaches it without copying (retaining) it out of the machine.
    /// Read only by the thread delivering on that path; dropped by a lock holder once the machine is
    /// terminal and the path is `off` (nobody delivers on it, and nobody can again), else by `deinit`.
    #if SPOUT_CHECKED_EXCLUSIVITY
        @usableFromInline var fastDownstream: Unmanaged<DownstreamBox<Downstream>>?
    #else
        // Unchecked: bench/reactive.sh `flatmap` (every value on the lock-free path).
        @usableFromInline @exclusivity(unchecked) var fastDownstream: Unmanaged<DownstreamBox<Downstream>>?
    #endif

    @usableFromInline let maxPublishers: Subscribers.Demand  // Immutable.

    /// The callbacks of every child subscriber. Set once in `init`, immutable after (a `var` only
    /// because it is made after the stored properties).
    @usableFromInline var childRelay: FlatMapChildRelay<Downstream.Input, Downstream.Failure>?

    /// A child subscriber no publisher holds any more, kept for the next child. Only
    /// ``addChild(_:)`` touches it, and its calls are serialized (the outer upstream's values, or
    /// `merge` subscribing its publishers one after another).
    #if SPOUT_CHECKED_EXCLUSIVITY
        @usableFromInline var spareChild: FlatMapChild<Downstream.Input, Downstream.Failure>?
    #else
        // Unchecked: bench/reactive.sh `flatmap-optional` (every child).
        @usableFromInline @exclusivity(unchecked) var spareChild: FlatMapChild<Downstream.Input, Downstream.Failure>?
    #endif

    // The next three are touched only from the outer upstream's calls (and `merge`'s `receive`),
    // which Combine's contract serializes, so they need no lock: a completion that arrives
    // re-entrantly, from inside a child's `subscribe`, runs on the same thread.

    /// Whether the outer upstream completed: a value it sends after that is dropped.
    #if SPOUT_CHECKED_EXCLUSIVITY
        @usableFromInline var outerEnded = false
    #else
        // Unchecked: bench/reactive.sh `flatmap` (every outer value).
        @usableFromInline @exclusivity(unchecked) var outerEnded = false
    #endif
    /// How many `addChild` calls are inside a child publisher's `subscribe` (more than one when the
    /// outer upstream sends re-entrantly, from inside such a `subscribe`).
    #if SPOUT_CHECKED_EXCLUSIVITY
        @usableFromInline var childrenSubscribing = 0
    #else
        // Unchecked: bench/reactive.sh `flatmap-optional` (every child).
        @usableFromInline @exclusivity(unchecked) var childrenSubscribing = 0
    #endif
    /// The outer upstream's `.finished` arrived re-entrantly while a child was subscribing: it is
    /// handled once every such child holds its slot, so that the stream does not finish without it.
    #if SPOUT_CHECKED_EXCLUSIVITY
        @usableFromInline var deferredOuterFinish = false
    #else
        // Unchecked: bench/reactive.sh `flatmap-optional` (every child).
        @usableFromInline @exclusivity(unchecked) var deferredOuterFinish = false
    #endif

    @inlinable
    init(downstream: Downstream, maxPublishers: Subscribers.Demand, name: String) {
        machine = Machine(downstream: downstream, maxPublishers: maxPublishers)
        fastDownstream = .passRetained(DownstreamBox(downstream))
        self.name = name
        self.maxPublishers = maxPublishers
        // Made here (called where the types are concrete) so that children reach specialized code.
        // They capture nothing: the calling child passes its owner (this subscription), borrowed,
        // so a call retains nothing.
        childRelay = FlatMapChildRelay(
            onSubscription: { unsafeDowncast($0, to: FlatMapInner.self).childSubscribed($1, $2) },
            onValue: { unsafeDowncast($0, to: FlatMapInner.self).childReceived($1, $2) },
            onCompletion: { unsafeDowncast($0, to: FlatMapInner.self).childCompleted($1, $2) }
        )
    }

    deinit {
        fastDownstream?.release()
    }

    @inlinable
    var description: String { name }

    @inlinable
    var customMirror: Mirror { Mirror(self, children: []) }

    @inlinable
    var playgroundDescription: Any { description }

    /// Runs one event of the machine under the lock: takes the machine back from the lock-free path
    /// first, and lends it again (or drops ``fastDownstream``) after. Until a `Just` child arrived
    /// the path was never lent (``FlatMapStateMachine/canLendToFastPath``), so a stream of other
    /// children skips both steps but the release at the end (bench/reactive.sh `flatmap-optional`).
    @inlinable
    func locked<Result>(_ body: (inout Machine) -> Result) -> Result {
        // The box comes out beside the result, not in a tuple with it: a tuple holding a generic
        // action enum is copied and destroyed through value witnesses even in specialized code.
        var retired: Unmanaged<DownstreamBox<Downstream>>?
        let result = lock.withLock { () -> Result in
            if machine.immediateChildrenSeen { revokeFastPath() }
            let result = body(&machine)
            // `immediateChildrenSeen` never goes back to false: if it held before the event, it holds now.
            if machine.immediateChildrenSeen || machine.isTerminal {
                retired = settleFastPath(&machine)
            }
            return result
        }
        retired?.release()
        return result
    }

    /// Takes the machine back from the lock-free path. Call with the lock held, before any event.
    /// If a thread is delivering on that path, marks the machine as delivering: that thread runs the
    /// delivery loop when it returns.
    @inlinable
    func revokeFastPath() {
        if FastPath.revoke(fast) { machine.fastDeliveryRevoked() }
    }

    /// After an event, with the lock held: lends the machine to the lock-free path if it can go
    /// there; else, once the machine is terminal and nobody is on that path, returns
    /// ``fastDownstream`` for the caller to release outside the lock. Takes the machine `inout`: a
    /// read of the stored property would copy the whole machine (through value witnesses) per step.
    @inlinable
    func settleFastPath(_ machine: inout Machine) -> Unmanaged<DownstreamBox<Downstream>>? {
        if machine.canLendToFastPath {
            fast.store(FastPath.lent, ordering: .releasing)
            return nil
        }
        guard machine.isTerminal, fastDownstream != nil, fast.load(ordering: .acquiring) == FastPath.off else {
            return nil
        }
        let retired = fastDownstream
        fastDownstream = nil
        return retired
    }

    @inlinable
    func request(_ demand: Subscribers.Demand) {
        let (action, unlimit) = locked { $0.requested(demand) }
        // Children switched to `.unlimited` are asked first; what they send meanwhile waits in the
        // queue behind the value `action` delivers, if it delivers one (it then holds the delivery).
        for subscription in unlimit { subscription.request(.unlimited) }
        perform(consume action)
    }

    @inlinable
    func cancel() {
        let action = locked { $0.cancelled() }
        perform(consume action)
    }

    // MARK: Outer upstream

    /// Stores the outer subscription, hands this subscription downstream, and asks the upstream
    /// for `maxPublishers`; cancels a subscription that is not wanted.
    @inlinable
    func outerSubscribed(_ subscription: any Subscription) {
        guard let downstream = locked({ $0.outerSubscribed(subscription) }) else {
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
        if outerEnded { return }
        outerEnded = true
        if childrenSubscribing > 0, case .finished = completion {
            // Finished from inside a child's `subscribe`, before that child took its slot (Combine
            // counts a child from the moment it subscribes to it): `addChild` finishes afterwards.
            // A failure needs no wait: it ends the stream and cancels the child either way.
            deferredOuterFinish = true
            return
        }
        let action = locked { $0.outerCompleted(completion) }
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
        // What `flatMap` makes of a `Just` under an upstream that can fail: `Just.setFailureType(to:)` is a
        // `Result.Publisher` (Combine's specialization), `setFailureType` on an erased one the general operator.
        if let result = publisher as? Result<Downstream.Input, Downstream.Failure>.Publisher,
            case .success(let output) = result.result
        {
            addImmediateChild(output)
            return
        }
        if let just = publisher as? Publishers.SetFailureType<Just<Downstream.Input>, Downstream.Failure> {
            addImmediateChild(just.upstream.output)
            return
        }
        // The child registers (takes its slot) in the same locked step as its subscription when
        // that arrives during `subscribe`, as it does from most publishers; one that subscribes
        // later, from elsewhere, is registered here, so that the stream does not finish before it.
        // The outer upstream's calls are serialized; one that finishes re-entrantly, from inside
        // `subscribe`, is held back until then (see `outerCompleted`).
        var child: FlatMapChild<Downstream.Input, Downstream.Failure>
        if let spare = spareChild {
            spareChild = nil
            child = spare
            child.unpark(owner: self)
        } else {
            child = FlatMapChild(relay: childRelay.unsafelyUnwrapped, owner: self)
        }
        childrenSubscribing += 1
        publisher.subscribe(child)
        childrenSubscribing -= 1
        if !child.isRegistered {
            locked { $0.childAdded(child) }
        }
        if deferredOuterFinish, childrenSubscribing == 0 {
            deferredOuterFinish = false
            perform(locked { $0.outerCompleted(.finished) })
        }
        // A child its publisher let go of (one that finished inside `subscribe`, the usual case
        // for a publisher of a few values) can no longer be called: it serves the next child,
        // which then costs no allocation. The fence orders a release made on another thread
        // before this reuse.
        if isKnownUniquelyReferenced(&child) {
            atomicMemoryFence(ordering: .acquiring)
            #if SPOUT_TSAN
                // ThreadSanitizer does not see the runtime's reference counts. Every call a child
                // gets ends in a locked step after reading its fields, so taking the lock shows it
                // that those reads came before `park` writes them.
                lock.withLock {}
            #endif
            child.park()
            spareChild = child
        }
    }

    /// Adds a child that sends `value` and finishes as soon as it is subscribed (see
    /// ``FlatMapStateMachine/immediateChildArrived(_:)``).
    @inlinable
    func addImmediateChild(_ value: Downstream.Input) {
        if fast.compareExchange(expected: FastPath.lent, desired: FastPath.delivering, ordering: .acquiring).exchanged {
            // Demand is unlimited, so whatever the subscriber adds changes nothing.
            _ = DownstreamBox.with(fastDownstream) { $0.receive(value) }
            if fast.compareExchange(expected: FastPath.delivering, desired: FastPath.lent, ordering: .releasing)
                .exchanged
            {
                return
            }
            // Revoked meanwhile: the revoking thread marked the machine as delivering (or ended it),
            // for this thread to run the delivery loop. Its own copy of the subscriber, since the box
            // may be dropped once the path is `off`.
            let downstream = DownstreamBox.with(fastDownstream) { $0 }
            fast.store(FastPath.off, ordering: .releasing)
            deliverLoop(to: downstream, additional: .none)
            return
        }
        let action = locked { $0.immediateChildArrived(value) }
        switch consume action {
        case .deliver(let downstream):
            // No child to ask for more: the loop starts from the value's returned demand, so this
            // path neither makes nor destroys a `FlatMapChildSubscription` (value witness calls).
            deliverLoop(to: downstream, additional: downstream.receive(value))
            // With unlimited publishers a finished child asks for nothing, and the stream cannot
            // be done while its outer upstream is sending (the delivery loop would have finished it).
            if maxPublishers != .unlimited, let followUp = locked({ $0.immediateChildFinished() }) {
                perform(followUp)
            }
        case .followUp(let followUp):
            perform(consume followUp)
        }
    }

    // MARK: Children

    @inlinable
    func childSubscribed(_ child: FlatMapChild<Downstream.Input, Downstream.Failure>, _ subscription: any Subscription)
    {
        if let demand = locked({ $0.childSubscribed(child, subscription) }) {
            subscription.request(demand)
        } else {
            subscription.cancel()
        }
    }

    @inlinable
    func childReceived(
        _ child: FlatMapChild<Downstream.Input, Downstream.Failure>,
        _ value: Downstream.Input
    ) -> Subscribers.Demand {
        guard let (downstream, requestOneMore) = locked({ $0.childReceived(child, value) }) else {
            return .none
        }
        deliverLoop(to: downstream, additional: downstream.receive(value))
        return requestOneMore ? .max(1) : .none
    }

    @inlinable
    func childCompleted(
        _ child: FlatMapChild<Downstream.Input, Downstream.Failure>,
        _ completion: Subscribers.Completion<Downstream.Failure>
    ) {
        if let action = locked({ $0.childCompleted(child, completion) }) {
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
        let additional = downstream.receive(first)
        child.requestOne()
        deliverLoop(to: downstream, additional: additional)
    }

    /// The rest of the delivery loop, after a value went out with `additional` demand returned.
    @inlinable
    func deliverLoop(to downstream: Downstream, additional: Subscribers.Demand) {
        var additional = additional
        while true {
            let action = locked { $0.delivered(additional) }
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
/// **Ownership:** retained by the inner; referenced unowned by every child (which retains the inner).
/// Holds nothing: each call is handed the inner by the child.
///
/// **Thread safety:** immutable; its closures are safe to call from any thread.
@usableFromInline
internal final class FlatMapChildRelay<Input, Failure: Error> {
    // Each takes the child's owner (the FlatMapInner) first. All three are immutable.
    @usableFromInline let onSubscription: (AnyObject, FlatMapChild<Input, Failure>, any Subscription) -> Void
    @usableFromInline let onValue: (AnyObject, FlatMapChild<Input, Failure>, Input) -> Subscribers.Demand  // Immutable.
    @usableFromInline let onCompletion:
        (AnyObject, FlatMapChild<Input, Failure>, Subscribers.Completion<Failure>) -> Void  // Immutable.

    @inlinable
    init(
        onSubscription: @escaping (AnyObject, FlatMapChild<Input, Failure>, any Subscription) -> Void,
        onValue: @escaping (AnyObject, FlatMapChild<Input, Failure>, Input) -> Subscribers.Demand,
        onCompletion: @escaping (AnyObject, FlatMapChild<Input, Failure>, Subscribers.Completion<Failure>) -> Void
    ) {
        self.onSubscription = onSubscription
        self.onValue = onValue
        self.onCompletion = onCompletion
    }
}

/// The subscriber `flatMap` and `merge` attach to each inner publisher: it passes every call,
/// with itself, to the relay.
///
/// It takes its slot in ``FlatMapStateMachine`` when its subscription arrives (or, if that has not
/// happened by the time `subscribe` returns, right after), and gives it up when it completes: the
/// machine reads and writes `slot` only under the owner's lock, so a child that calls after its
/// completion (its slot maybe taken by another child since) is recognized and ignored.
///
/// Once its publisher has let go of it, ``FlatMapInner`` reuses it for the next child.
///
/// **Ownership:** retained by that publisher's subscription; retains its owner (the
/// ``FlatMapInner``), which holds the relay, while in use; held by the owner while parked.
///
/// **Thread safety:** forwards every call to the relay, which is safe from any thread.
@usableFromInline
internal final class FlatMapChild<Input, Failure: Error>: Subscriber, CustomStringConvertible, @unchecked Sendable {
    // @unchecked Sendable: `slot` is guarded by the owner's lock (see above); `owner` and the reset
    // of `slot` change only while the child is parked or being unparked, when nothing but the
    // owner's `addChild` references it; the rest is immutable or atomic.

    // Both references are unmanaged so that a call through them retains nothing: the relay is
    // held by the owner; the owner is retained by hand while the child is in use (`nil` while
    // parked, so that a parked child, which the owner holds, makes no cycle).
    @usableFromInline let relay: Unmanaged<FlatMapChildRelay<Input, Failure>>  // Immutable.
    #if SPOUT_CHECKED_EXCLUSIVITY
        @usableFromInline var owner: Unmanaged<AnyObject>?
    #else
        // Unchecked: bench/reactive.sh `flatmap-optional` (every call a child gets).
        @usableFromInline @exclusivity(unchecked) var owner: Unmanaged<AnyObject>?
    #endif
    /// The child's slot while registered and not completed, else -1. Guarded by the owner's lock.
    #if SPOUT_CHECKED_EXCLUSIVITY
        @usableFromInline var slot = -1
    #else
        // Unchecked: bench/reactive.sh `flatmap-optional` (every locked step of a child).
        @usableFromInline @exclusivity(unchecked) var slot = -1
    #endif
    /// Whether the child took its slot: read without the lock by ``FlatMapInner/addChild(_:)``.
    @usableFromInline let registered = Atomic<Bool>(false)

    @inlinable
    init(relay: FlatMapChildRelay<Input, Failure>, owner: AnyObject) {
        self.relay = Unmanaged.passUnretained(relay)
        self.owner = Unmanaged.passRetained(owner)
    }

    deinit {
        owner?.release()
    }

    @inlinable
    var isRegistered: Bool { registered.load(ordering: .acquiring) }

    /// Sets the child aside for reuse; only while nothing else references it.
    @inlinable
    func park() {
        owner?.release()
        owner = nil
        slot = -1
        registered.store(false, ordering: .relaxed)
    }

    /// Takes a parked child back into use for `owner`.
    @inlinable
    func unpark(owner: AnyObject) {
        self.owner = Unmanaged.passRetained(owner)
    }

    /// Takes `slot`; called under the owner's lock, once per use.
    @inlinable
    func register(slot: Int) {
        self.slot = slot
        registered.store(true, ordering: .releasing)
    }

    @inlinable
    var description: String { "FlatMap" }

    @inlinable
    func receive(subscription: any Subscription) {
        relay._withUnsafeGuaranteedRef { relay in
            owner.unsafelyUnwrapped._withUnsafeGuaranteedRef { relay.onSubscription($0, self, subscription) }
        }
    }

    @inlinable
    func receive(_ input: Input) -> Subscribers.Demand {
        relay._withUnsafeGuaranteedRef { relay in
            owner.unsafelyUnwrapped._withUnsafeGuaranteedRef { relay.onValue($0, self, input) }
        }
    }

    @inlinable
    func receive(completion: Subscribers.Completion<Failure>) {
        relay._withUnsafeGuaranteedRef { relay in
            owner.unsafelyUnwrapped._withUnsafeGuaranteedRef { relay.onCompletion($0, self, completion) }
        }
    }
}
