import Synchronization

/// The subscription of a publisher that walks an iterator: ``Publishers/Sequence`` and ``Record``.
///
/// It pulls one element ahead, so that the completion follows the last element at once, without
/// waiting for more demand (as Combine does). The thread that turns demand from zero to positive
/// becomes the deliverer and owns the iterator until the demand is used up; requests arriving
/// meanwhile, from other threads or from inside `receive(_:)`, are added to the state and picked
/// up by that loop. With `.unlimited` demand the loop takes no lock per element: it only reads an
/// atomic flag that `cancel()` sets.
///
/// **Ownership:** retained by its subscriber; retains the subscriber and the iterator until it
/// completes or is cancelled.
///
/// **Thread safety:** safe to call from any thread.
///
/// Inlinable, so that the delivering loop is specialized in the client module for the client's
/// subscriber: then a value costs one direct call into the chain.
@usableFromInline
internal final class IteratingSubscription<Downstream: Subscriber, Elements: IteratorProtocol>: Subscription,
    CustomStringConvertible, CustomReflectable, @unchecked Sendable
where Elements.Element == Downstream.Input {
    // @unchecked Sendable: `machine` is only touched inside `lock`; `cancelRequested` is atomic;
    // `name` and `completion` are immutable.

    @usableFromInline let lock = Lock()
    @usableFromInline var machine: IteratingStateMachine<Downstream, Elements>  // Guarded by lock.
    /// Set by `cancel()` before it takes the lock, so the delivering loop sees it without locking.
    @usableFromInline let cancelRequested = Atomic<Bool>(false)
    @usableFromInline let completion: Subscribers.Completion<Downstream.Failure>
    @usableFromInline let name: String
    /// `request(_:)` forwards here. The closure is made in `init`, which the subscribing code calls
    /// with concrete types, so its body is specialized; a protocol witness of a generic class never is.
    @usableFromInline var requestThunk: (Subscribers.Demand) -> Void = { _ in }

    @inlinable
    init(
        iterator: Elements,
        next: Elements.Element,
        downstream: Downstream,
        completion: Subscribers.Completion<Downstream.Failure>,
        name: String
    ) {
        machine = IteratingStateMachine(iterator: iterator, next: next, downstream: downstream)
        self.completion = completion
        self.name = name
        requestThunk = { [unowned self] demand in self.requestSpecialized(demand) }
    }

    /// Subscribes `downstream` to the elements of `iterator`, then `completion`.
    ///
    /// An iterator that is empty from the start completes at once, after `Subscriptions.empty`.
    @inlinable
    internal static func subscribe(
        _ downstream: Downstream,
        to iterator: Elements,
        completion: Subscribers.Completion<Downstream.Failure>,
        name: String
    ) {
        var iterator = iterator
        guard let first = iterator.next() else {
            downstream.receive(subscription: Subscriptions.empty)
            downstream.receive(completion: completion)
            return
        }
        let subscription = IteratingSubscription(
            iterator: iterator,
            next: first,
            downstream: downstream,
            completion: completion,
            name: name
        )
        downstream.receive(subscription: subscription)
    }

    @usableFromInline internal var description: String { name }

    @usableFromInline internal var customMirror: Mirror { Mirror(self, children: []) }

    @inlinable
    internal func request(_ demand: Subscribers.Demand) {
        requestThunk(demand)
    }

    @inlinable
    func requestSpecialized(_ demand: Subscribers.Demand) {
        // A demand of zero asks for nothing; Combine's sequence subscription does not trap on it.
        if demand == .none { return }
        guard case .deliver(var iterator, let next, let downstream) = lock.withLock({ machine.demandRequested(demand) })
        else { return }
        deliver(iterator: &iterator, next: next, downstream: downstream, demand: demand)
    }

    @inlinable
    internal func cancel() {
        cancelRequested.store(true, ordering: .releasing)
        lock.withLock { machine.cancelled() }
    }

    /// The delivering loop: runs on the thread that found the subscription waiting for demand.
    @inlinable
    func deliver(
        iterator: inout Elements,
        next: Elements.Element,
        downstream: Downstream,
        demand: Subscribers.Demand
    ) {
        var next = next
        var demand = demand
        while true {
            if demand == .unlimited {
                while !cancelRequested.load(ordering: .acquiring) {
                    _ = downstream.receive(next)
                    guard let following = iterator.next() else { return finish(downstream) }
                    next = following
                }
                return
            }
            while demand > 0 {
                if cancelRequested.load(ordering: .acquiring) { return }
                demand -= 1
                demand += downstream.receive(next)
                guard let following = iterator.next() else { return finish(downstream) }
                next = following
            }
            switch lock.withLock({ machine.demandExhausted(iterator: iterator, next: next, downstream: downstream) }) {
            case .stop:
                return
            case .continue(let more):
                demand = more
            }
        }
    }

    @inlinable
    func finish(_ downstream: Downstream) {
        if lock.withLock({ machine.finished() }) {
            downstream.receive(completion: completion)
        }
    }
}

/// Who owns the iterator of an ``IteratingSubscription``, and the demand that is waiting.
///
/// **Thread safety:** value type; its owner keeps it behind a lock.
@usableFromInline
internal struct IteratingStateMachine<Downstream: Subscriber, Elements: IteratorProtocol>
where Elements.Element == Downstream.Input {
    @usableFromInline
    enum State {
        /// No demand; the iterator, the element pulled ahead and the subscriber rest here.
        /// Next: `.delivering`, `.terminal`.
        case awaitingDemand(Elements, next: Elements.Element, Downstream)
        /// One thread is delivering and holds the iterator; `added` is demand requested meanwhile.
        /// Next: `.awaitingDemand`, `.terminal`.
        case delivering(added: Subscribers.Demand)
        /// Finished or cancelled; everything released. Final.
        case terminal
    }

    @usableFromInline
    internal enum RequestAction {
        case none
        case deliver(Elements, next: Elements.Element, Downstream)
    }

    @usableFromInline
    internal enum ExhaustedAction {
        case stop
        case `continue`(Subscribers.Demand)
    }

    @usableFromInline var state: State

    @inlinable
    internal init(iterator: Elements, next: Elements.Element, downstream: Downstream) {
        state = .awaitingDemand(iterator, next: next, downstream)
    }

    @inlinable
    internal mutating func demandRequested(_ demand: Subscribers.Demand) -> RequestAction {
        switch state {
        case .awaitingDemand(let iterator, let next, let downstream):
            state = .delivering(added: .none)
            return .deliver(iterator, next: next, downstream)
        case .delivering(let added):
            state = .delivering(added: added + demand)
            return .none
        case .terminal:
            return .none
        }
    }

    /// The delivering thread used up its demand; it continues with what was added, or parks.
    @inlinable
    internal mutating func demandExhausted(
        iterator: Elements,
        next: Elements.Element,
        downstream: Downstream
    ) -> ExhaustedAction {
        switch state {
        case .delivering(let added) where added > 0:
            state = .delivering(added: .none)
            return .continue(added)
        case .delivering:
            state = .awaitingDemand(iterator, next: next, downstream)
            return .stop
        case .terminal:
            return .stop
        case .awaitingDemand:
            internalInconsistency("demand exhausted while awaiting demand")
        }
    }

    /// - Returns: Whether to send the completion (not if cancelled meanwhile).
    @inlinable
    internal mutating func finished() -> Bool {
        switch state {
        case .delivering:
            state = .terminal
            return true
        case .terminal:
            return false
        case .awaitingDemand:
            internalInconsistency("finished while awaiting demand")
        }
    }

    @inlinable
    internal mutating func cancelled() {
        state = .terminal
    }
}
