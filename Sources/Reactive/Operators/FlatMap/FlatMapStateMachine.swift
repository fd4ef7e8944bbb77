import Synchronization

/// The state of one `flatMap` (or `merge`) subscription: the outer upstream, the inner
/// publishers ("children") it subscribed to, the values waiting for demand, and who is delivering.
///
/// Demand is shared as Combine shares it. While downstream demand is `.unlimited` when a child
/// subscribes, that child is asked for `.unlimited`; otherwise each child is asked for one value
/// at a time: once when it subscribes and again each time its previous value has been delivered.
/// A value that cannot go out yet (no demand, or another thread is delivering) waits in a FIFO
/// queue, so at most one value per one-at-a-time child waits. The outer upstream is asked for
/// `maxPublishers` at the start and for one more each time a child finishes.
///
/// The stream finishes when the outer upstream finished, every child finished and the queue is
/// empty; it fails on the first failure of the outer upstream or of any child, cancelling the rest.
///
/// **Ownership:** owned by ``FlatMapInner``; holds the downstream and every upstream
/// subscription until it becomes terminal, then drops them.
///
/// **Thread safety:** value type; every event runs under ``FlatMapInner``'s lock.
@usableFromInline
internal struct FlatMapStateMachine<Downstream: Subscriber> {
    @usableFromInline typealias Output = Downstream.Input
    @usableFromInline typealias Failure = Downstream.Failure

    @usableFromInline
    enum State {
        /// Nobody is delivering; the queue is empty or there is no demand. Next: `.delivering`,
        /// `.terminal`.
        case idle
        /// One thread is inside the downstream's `receive(_:)`. Values arriving meanwhile are queued
        /// and demand is recorded; that thread's loop delivers them. `pendingFailure` is a failure
        /// that arrived during the delivery and goes out when it ends. Next: `.idle`, `.terminal`.
        case delivering(pendingFailure: Failure?)
        /// Completed or cancelled; everything is released. Next: none.
        case terminal
    }

    // Not nested in this generic type, so that their metadata is not generic.
    @usableFromInline typealias Outer = FlatMapOuter
    @usableFromInline typealias Child = FlatMapChildSlot

    /// What the owner does, outside the lock, after an event.
    @usableFromInline
    enum Action {
        case none
        /// Request the demand from the subscription.
        case request(any Subscription, Subscribers.Demand)
        /// Cancel a subscription that is not wanted.
        case cancel(any Subscription)
        /// Cancel these subscriptions (after a failure that waits for the current delivery).
        case cancelAll([any Subscription])
        /// Deliver this queued value, ask the given subscription (its child) for one more, then
        /// run the delivery loop.
        case deliverQueued(Downstream, Output, thenRequestOneFrom: FlatMapChildSubscription)
        /// Cancel these subscriptions, then send the completion.
        case complete(Downstream, Subscribers.Completion<Failure>, cancel: [any Subscription])
    }

    /// What the owner does after ``immediateChildArrived(_:)``.
    @usableFromInline
    enum ImmediateChildAction {
        /// Send the value to this downstream as the deliverer, then run the delivery loop.
        case deliver(Downstream)
        /// The value is queued (or dropped after the end); carry out this action.
        case followUp(Action)

        @inlinable
        static var none: Self { .followUp(.none) }
    }

    /// What the delivering thread does next.
    @usableFromInline
    enum DeliveryAction {
        /// Deliver this queued value, then ask the given subscription (its child) for one more.
        case deliver(Output, thenRequestOneFrom: FlatMapChildSubscription)
        /// Cancel these subscriptions, send the completion and stop.
        case complete(Subscribers.Completion<Failure>, cancel: [any Subscription])
        /// Stop delivering.
        case stop
    }

    @usableFromInline var state: State = .idle
    @usableFromInline var downstream: Downstream?
    @usableFromInline var outer: Outer = .active(nil) {
        didSet { outerFinished = if case .finished = outer { true } else { false } }
    }
    /// Whether `outer` is `.finished`, kept beside it: the per-child checks read this flag, since
    /// matching on `outer` copies its existential payload.
    @usableFromInline var outerFinished = false
    @usableFromInline var children: ContiguousArray<Child> = []
    /// Slots of ``children`` that are free for reuse.
    @usableFromInline var freeSlots: [Int] = []
    /// Slots in use (live children, and finished children whose values still wait).
    @usableFromInline var slotsInUse = 0
    /// Values waiting for demand or for the current delivery to end, with their child's slot.
    @usableFromInline var queue = RingQueue<(slot: Int, value: Output)>()
    /// Outstanding downstream demand.
    @usableFromInline var demand = Subscribers.Demand.none
    /// How many children may be live at once: what the outer upstream is asked for.
    @usableFromInline let maxPublishers: Subscribers.Demand
    /// Whether a child that finishes as soon as it is subscribed (a `Just`) arrived: only then is the
    /// machine lent to the owner's lock-free path, which only such children use; a stream of other
    /// children would pay for lending and taking back at every step.
    @usableFromInline var immediateChildrenSeen = false

    @inlinable
    init(downstream: Downstream, maxPublishers: Subscribers.Demand) {
        self.downstream = downstream
        self.maxPublishers = maxPublishers
    }

    // MARK: Outer upstream

    /// Stores the outer subscription; returns the downstream to hand the subscription to, or `nil`
    /// when this subscription is not wanted (a second one, or after the end).
    @inlinable
    mutating func outerSubscribed(_ subscription: any Subscription) -> Downstream? {
        guard case .active(nil) = outer, !isTerminal else { return nil }
        outer = .active(subscription)
        return downstream
    }

    /// Gives `child` a slot, unless it has one or the stream is over: for a child whose
    /// subscription did not arrive while its publisher's `subscribe` ran.
    @inlinable
    mutating func childAdded(_ child: FlatMapChild<Output, Failure>) {
        guard !isTerminal, !child.registered.load(ordering: .relaxed) else { return }
        child.register(slot: reserveSlot())
    }

    /// A child that sends one value and finishes as soon as it is subscribed (a ``Just``) arrived:
    /// the transitions of ``childAdded(_:)``, ``childSubscribed(_:_:)``, ``childReceived(_:_:)``
    /// and ``childCompleted(_:_:)`` in one step. The child takes a slot only while its value waits.
    /// When the result is `.deliver`, the owner sends the value, runs the delivery loop and then
    /// reports ``immediateChildFinished()`` (if `maxPublishers` is limited).
    @inlinable
    mutating func immediateChildArrived(_ value: Output) -> ImmediateChildAction {
        guard !isTerminal else { return .none }
        immediateChildrenSeen = true
        if case .idle = state, demand > 0, let downstream {
            demand -= 1
            state = .delivering(pendingFailure: nil)
            return .deliver(downstream)
        }
        // Waits as the value of a finished child does, in a slot freed when it goes out.
        let slot = reserveSlot()
        children[slot].finished = true
        children[slot].queued = 1
        queue.append((slot, value))
        return .followUp(childFinished() ?? .none)
    }

    /// The immediate child whose value ``immediateChildArrived(_:)`` handed out directly is done.
    /// - Returns: `nil` when there is nothing to do (the usual case), else the action.
    @inlinable
    mutating func immediateChildFinished() -> Action? {
        guard !isTerminal else { return nil }
        return childFinished()
    }

    @inlinable
    mutating func outerCompleted(_ completion: Subscribers.Completion<Failure>) -> Action {
        guard !isTerminal else { return .none }
        switch completion {
        case .finished:
            outer = .finished
            return finishIfDone()
        case .failure(let error):
            // The failed outer upstream is done: not among the subscriptions to cancel.
            outer = .finished
            return fail(error)
        }
    }

    // MARK: Children

    /// A child's subscription arrived; the child takes its slot now if it has none (the usual case:
    /// one locked step for both). - Returns: the demand to ask of it, or `nil` to cancel it.
    @inlinable
    mutating func childSubscribed(
        _ child: FlatMapChild<Output, Failure>,
        _ subscription: any Subscription
    ) -> Subscribers.Demand? {
        guard !isTerminal else { return nil }
        if !child.registered.load(ordering: .relaxed) {
            child.register(slot: reserveSlot())
        }
        let slot = child.slot
        guard slot >= 0, slot < children.count, children[slot].live, children[slot].subscription.isEmpty,
            !children[slot].finished
        else {
            return nil
        }
        let oneAtATime = demand != .unlimited
        children[slot].subscription = .held(subscription)
        children[slot].oneAtATime = oneAtATime
        return oneAtATime ? .max(1) : .unlimited
    }

    /// A child sent a value. When the value goes out on this thread, as the deliverer, the result
    /// holds the downstream to send it to (then run the delivery loop), and `requestOneMore` says
    /// whether the child's `receive(_:)` should return `.max(1)` afterwards.
    @inlinable
    mutating func childReceived(
        _ child: FlatMapChild<Output, Failure>,
        _ value: Output
    ) -> (deliverTo: Downstream, requestOneMore: Bool)? {
        let slot = child.slot
        guard !isTerminal, slot >= 0, slot < children.count, children[slot].live else { return nil }
        let oneAtATime = children[slot].oneAtATime
        if case .idle = state, demand > 0, let downstream {
            demand -= 1
            state = .delivering(pendingFailure: nil)
            return (downstream, oneAtATime)
        }
        children[slot].queued += 1
        queue.append((slot, value))
        return nil
    }

    /// - Returns: `nil` when there is nothing to do (the usual case), else the action.
    @inlinable
    mutating func childCompleted(
        _ child: FlatMapChild<Output, Failure>,
        _ completion: Subscribers.Completion<Failure>
    ) -> Action? {
        let slot = child.slot
        guard !isTerminal, slot >= 0, slot < children.count, children[slot].live, !children[slot].finished else {
            return nil
        }
        // The child is done with its slot, which another child may take next: whatever this one
        // sends from now on (a misbehaving publisher) is dropped, not counted as the other's.
        child.slot = -1
        switch completion {
        case .finished:
            children[slot].finished = true
            children[slot].subscription = .empty
            if children[slot].queued == 0 {
                releaseSlot(slot)
            }
            return childFinished()
        case .failure(let error):
            children[slot].subscription = .empty
            return fail(error)
        }
    }

    // MARK: Downstream

    /// Downstream asked for more. When its demand becomes `.unlimited` here, every child still
    /// asked one value at a time is switched to `.unlimited` (as Combine does): the result's
    /// `unlimit` holds their subscriptions, for the owner to ask for `.unlimited` before it carries
    /// out `action`. It is empty otherwise (no allocation).
    @inlinable
    mutating func requested(_ newDemand: Subscribers.Demand) -> (action: Action, unlimit: [any Subscription]) {
        guard newDemand > 0 else { apiViolation("demand must be greater than zero, got \(newDemand)") }
        guard !isTerminal else { return (.none, []) }
        var unlimit: [any Subscription] = []
        if newDemand == .unlimited, demand != .unlimited {
            unlimit = childrenAskedOneAtATime()
        }
        demand += newDemand
        return (startQueuedDelivery(), unlimit)
    }

    /// Switches every live child that is asked one value at a time to `.unlimited`; returns their
    /// subscriptions, to ask.
    @inlinable
    mutating func childrenAskedOneAtATime() -> [any Subscription] {
        var subscriptions: [any Subscription] = []
        for slot in children.indices where children[slot].live && children[slot].oneAtATime {
            children[slot].oneAtATime = false
            if case .held(let subscription) = children[slot].subscription {
                subscriptions.append(subscription)
            }
        }
        return subscriptions
    }

    /// With demand and nobody delivering, starts a delivery of the oldest queued value, if any.
    @inlinable
    mutating func startQueuedDelivery() -> Action {
        guard case .idle = state, let downstream, let entry = queue.first else { return .none }
        // Values waited for this demand: start a delivery with the oldest; the loop does the rest.
        _ = queue.popFirst()
        demand -= 1
        state = .delivering(pendingFailure: nil)
        let requestFrom = valueLeftQueue(slot: entry.slot)
        return .deliverQueued(downstream, entry.value, thenRequestOneFrom: requestFrom)
    }

    @inlinable
    mutating func cancelled() -> Action {
        guard !isTerminal else { return .none }
        let subscriptions = allSubscriptions()
        enterTerminal()
        return .cancelAll(subscriptions)
    }

    /// The delivering thread finished one `receive(_:)`, which returned `additional`.
    @inlinable
    mutating func delivered(_ additional: Subscribers.Demand) -> DeliveryAction {
        guard case .delivering(let pendingFailure) = state else { return .stop }
        if let pendingFailure {
            enterTerminal()
            return .complete(.failure(pendingFailure), cancel: [])
        }
        demand += additional
        if demand > 0, let entry = queue.popFirst() {
            demand -= 1
            return .deliver(entry.value, thenRequestOneFrom: valueLeftQueue(slot: entry.slot))
        }
        if outerFinished, slotsInUse == 0 {
            enterTerminal()
            return .complete(.finished, cancel: [])
        }
        state = .idle
        return .stop
    }

    // MARK: Lock-free path

    /// Whether the owner may lend this machine to its lock-free path for `Just` children: once such a
    /// child arrived (``immediateChildrenSeen``), idle, with
    /// unlimited demand, nothing queued, the outer upstream still sending and `maxPublishers`
    /// unlimited, so that such a value needs only the delivery right (no demand to count, no slot,
    /// no request to the outer upstream, and the stream cannot end by it).
    @inlinable
    var canLendToFastPath: Bool {
        guard immediateChildrenSeen, case .idle = state else { return false }
        return demand == .unlimited && queue.isEmpty && !outerFinished && maxPublishers == .unlimited
            && downstream != nil
    }

    /// The owner took the machine back while a thread delivers on the lock-free path: that thread
    /// holds the delivery right, and runs the delivery loop when it returns.
    @inlinable
    mutating func fastDeliveryRevoked() {
        guard case .idle = state else { internalInconsistency("fast delivery revoked while not idle") }
        state = .delivering(pendingFailure: nil)
    }

    // MARK: Helpers

    @inlinable
    var isTerminal: Bool {
        if case .terminal = state { return true }
        return false
    }

    /// A queued value of `slot` is going out: returns the child's subscription when the child
    /// should now be asked for one more, and frees the slot of a finished child with nothing left.
    @inlinable
    mutating func valueLeftQueue(slot: Int) -> FlatMapChildSubscription {
        guard children[slot].live else { internalInconsistency("queued value of a free slot \(slot)") }
        children[slot].queued -= 1
        if children[slot].finished {
            if children[slot].queued == 0 { releaseSlot(slot) }
            return .empty
        }
        return children[slot].oneAtATime ? children[slot].subscription : .empty
    }

    /// Takes a free slot (or a new one) for a child.
    @inlinable
    mutating func reserveSlot() -> Int {
        slotsInUse += 1
        if let slot = freeSlots.popLast() {
            children[slot].live = true
            children[slot].oneAtATime = false
            children[slot].queued = 0
            children[slot].finished = false
            return slot
        }
        children.append(Child(live: true))
        return children.count - 1
    }

    /// A child finished: the stream may be done, or the outer upstream may be asked for one more.
    /// - Returns: `nil` when there is nothing to do (the usual case), else the action.
    @inlinable
    mutating func childFinished() -> Action? {
        if case .idle = state, outerFinished, slotsInUse == 0 {
            return finishIfDone()
        }
        if maxPublishers != .unlimited, !outerFinished, case .active(let subscription?) = outer {
            return .request(subscription, .max(1))
        }
        return nil
    }

    @inlinable
    mutating func releaseSlot(_ slot: Int) {
        children[slot].live = false
        children[slot].subscription = .empty
        freeSlots.append(slot)
        slotsInUse -= 1
    }

    @inlinable
    mutating func finishIfDone() -> Action {
        guard case .idle = state, outerFinished, slotsInUse == 0, let downstream else { return .none }
        enterTerminal()
        return .complete(downstream, .finished, cancel: [])
    }

    @inlinable
    mutating func fail(_ error: Failure) -> Action {
        let subscriptions = allSubscriptions()
        if case .delivering(let pendingFailure) = state {
            guard pendingFailure == nil else { return .none }
            // The delivering thread sends the failure when its current delivery returns.
            dropUpstreams()
            state = .delivering(pendingFailure: error)
            return .cancelAll(subscriptions)
        }
        guard let downstream else { internalInconsistency("idle without a downstream") }
        enterTerminal()
        return .complete(downstream, .failure(error), cancel: subscriptions)
    }

    @inlinable
    func allSubscriptions() -> [any Subscription] {
        var subscriptions: [any Subscription] = []
        if case .active(let subscription?) = outer {
            subscriptions.append(subscription)
        }
        for child in children where child.live {
            if case .held(let subscription) = child.subscription {
                subscriptions.append(subscription)
            }
        }
        return subscriptions
    }

    @inlinable
    mutating func dropUpstreams() {
        outer = .finished
        children = []
        freeSlots = []
        slotsInUse = 0
        queue.removeAll()
    }

    @inlinable
    mutating func enterTerminal() {
        dropUpstreams()
        state = .terminal
        downstream = nil
    }
}

/// The outer upstream of a ``FlatMapStateMachine`` (the publisher of publishers). `merge` has
/// none: it stays `.active(nil)` until all its children have been added, then finishes.
@usableFromInline
internal enum FlatMapOuter {
    /// Still publishing; the subscription once it arrived.
    case active((any Subscription)?)
    /// Finished; no more children will be added.
    case finished
}

/// One child of a ``FlatMapStateMachine``, stored in a slot of its `children`; a slot is reused
/// once its child finished and none of its values waits in the queue.
@usableFromInline
internal struct FlatMapChildSlot {
    /// The child's subscription once it arrived; empty again after the child finished.
    @usableFromInline var subscription = FlatMapChildSubscription.empty
    /// Whether the child is asked for one value at a time (else it was asked for `.unlimited`).
    @usableFromInline var oneAtATime = false
    /// The child's values waiting in the queue.
    @usableFromInline var queued = 0
    /// Whether the child finished.
    @usableFromInline var finished = false
    /// Whether the slot holds a child; a free slot holds nothing else.
    @usableFromInline var live: Bool

    @inlinable
    init(live: Bool) {
        self.live = live
    }
}

/// A child's subscription, or none: an `Optional<any Subscription>` of our own. Not generic, so
/// storing, replacing and dropping one runs code compiled here; the standard `Optional` of an
/// existential goes through runtime value witnesses (bench/README.md has the figures).
@usableFromInline
internal enum FlatMapChildSubscription {
    case empty
    case held(any Subscription)

    @inlinable
    var isEmpty: Bool {
        if case .empty = self { return true }
        return false
    }

    /// Asks the held subscription, if any, for one more value.
    @inlinable
    func requestOne() {
        if case .held(let subscription) = self { subscription.request(.max(1)) }
    }
}
