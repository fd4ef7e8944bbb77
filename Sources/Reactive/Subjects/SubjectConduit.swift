import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What a ``SubjectConduit`` tells the subject that created it.
///
/// **Thread safety:** implementations are safe to call from any thread.
@usableFromInline
internal protocol SubjectConduitOwner: AnyObject {
    /// A conduit received its first demand: the subject may now ask its upstreams for values.
    func conduitDidRequestDemand()

    /// A conduit was cancelled: the subject forgets it.
    func conduitDidCancel(_ conduit: ObjectIdentifier)
}

/// The type-erased face of one subscriber's subscription to a subject, so that a subject can
/// keep subscribers of different types in one array.
///
/// **Ownership:** retained by its subject (until completion or cancel) and by its subscriber.
///
/// **Thread safety:** safe to call from any thread; subclasses serialize deliveries.
@usableFromInline
internal class SubjectConduitBase<Output, Failure: Error>: @unchecked Sendable {
    // @unchecked Sendable: no state here; the subclass guards its state with its lock.

    /// Offers a value; it is delivered only if the subscriber has demand for it.
    ///
    /// Calls a function the subclass's `init` passes up rather than an overridden method: `init`
    /// is called with concrete types, so that function is specialized, and the per-value path runs
    /// no unspecialized generic code. The function captures nothing and is stored in a `let`, so a
    /// call neither retains a closure context nor checks exclusivity.
    @inlinable
    internal final func offer(_ value: Output) {
        offerFunction(self, value)
    }

    @usableFromInline let offerFunction: (SubjectConduitBase<Output, Failure>, Output) -> Void

    /// Delivers a value on a subject's solo path (see ``SoloPath``), for the same reason as ``offer(_:)``.
    /// Only a sender that moved the path from `lent` to `delivering` calls this: it holds the delivery
    /// right, and demand is unlimited.
    @inlinable
    internal final func deliverOnSoloPath(_ value: Output) {
        soloDeliverFunction(self, value)
    }

    @usableFromInline let soloDeliverFunction: (SubjectConduitBase<Output, Failure>, Output) -> Void

    /// Offers `value` to each conduit of a subject's snapshot, in order.
    ///
    /// The snapshot keeps every conduit alive until this returns, so they are read as unretained
    /// references: a conduit is not retained and released per value (two atomic operations).
    @inlinable
    internal static func offer(_ value: Output, toEach conduits: ContiguousArray<SubjectConduitBase<Output, Failure>>) {
        conduits.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            base.withMemoryRebound(to: Unmanaged<SubjectConduitBase<Output, Failure>>.self, capacity: buffer.count) {
                for index in 0..<buffer.count {
                    $0[index]._withUnsafeGuaranteedRef { $0.offer(value) }
                }
            }
        }
    }

    @inlinable
    internal init(
        offer: @escaping (SubjectConduitBase<Output, Failure>, Output) -> Void,
        deliverOnSoloPath: @escaping (SubjectConduitBase<Output, Failure>, Output) -> Void
    ) {
        offerFunction = offer
        soloDeliverFunction = deliverOnSoloPath
    }

    /// Delivers the completion after any values already accepted.
    @inlinable
    internal func finish(_ completion: Subscribers.Completion<Failure>) {
        internalInconsistency("abstract SubjectConduitBase.finish called")
    }

    /// Switches this conduit's lock-free value path to the subject's `path` (see ``SoloPath``), or back to its
    /// own with `nil`, taking the old one back first: a sender still delivering on it finishes with
    /// ``soloDeliveryRevoked()`` (or the conduit's own path's rule). Called by the subject with its lock held,
    /// with a `path` that is `off` and names this conduit.
    @inlinable
    internal func useSoloPath(_ path: SoloPath?) {
        internalInconsistency("abstract SubjectConduitBase.useSoloPath called")
    }

    /// Runs the delivery loop for a sender whose solo-path delivery was revoked while it delivered: the
    /// revoking thread marked the conduit as delivering, and this thread still holds the delivery right.
    @inlinable
    internal func soloDeliveryRevoked() {
        internalInconsistency("abstract SubjectConduitBase.soloDeliveryRevoked called")
    }
}

/// The lock-free value path of a ``PassthroughSubject`` with exactly one subscriber: that subscriber's
/// conduit lends its own lock-free path (``SubjectConduit/fast``) here, so that a `send` takes the
/// delivery right with one compare-and-swap and gives it back with one more, instead of entering a gate
/// of the subject's and then the conduit's path (four atomic read-modify-writes a value;
/// bench/reactive.sh `subject`, `subject-var`).
///
/// `state` holds the ``FastPath`` states of the conduit named by `address`. Who moves it:
/// - the subject, holding its lock: names a conduit (`address`) only while `state` is `off` and no
///   conduit uses the path, then hands the path to the conduit (``SubjectConduitBase/useSoloPath(_:)``), and
///   later takes it back (`useSoloPath(nil)`);
/// - the conduit using the path, holding its own lock: `off` to `lent` when its machine can lend, and
///   back with ``FastPath/revoke(_:)``, exactly as with its own path;
/// - a sender: `lent` to `delivering` and back; if it finds `revoked`, it sets `off` under the subject's
///   lock and drains the conduit. So while `state` is not `off`, `address` is stable and its conduit alive
///   (the subject keeps it until then).
///
/// **Thread safety:** `state` and `address` are atomic; see above for who may write them.
@usableFromInline
internal final class SoloPath: @unchecked Sendable {
    // @unchecked Sendable: both fields are atomics.
    @usableFromInline let state = Atomic<Int>(FastPath.off)
    /// The conduit `state` belongs to, as an unretained address; 0 before the first.
    @usableFromInline let address = Atomic<UInt>(0)

    @inlinable
    internal init() {}
}

/// One subscriber's subscription to a ``PassthroughSubject`` or ``CurrentValueSubject``.
///
/// It keeps that subscriber's demand and serializes deliveries to it: the thread that finds
/// the conduit idle delivers; a thread that finds it delivering (another thread, or the
/// subscriber re-entering from `receive(_:)`) leaves the value in a queue, already counted
/// against the demand, and the delivering thread picks it up.
///
/// **Ownership:** retained by its subject until completion or cancel, and by its subscriber.
/// It retains the subscriber and the subject until then, and releases both after.
///
/// **Thread safety:** safe to call from any thread.
@usableFromInline
internal final class SubjectConduit<Downstream: Subscriber>: SubjectConduitBase<Downstream.Input, Downstream.Failure>,
    Subscription, CustomStringConvertible, CustomReflectable, @unchecked Sendable
{
    // @unchecked Sendable: `machine` is only touched inside `lock`; `name` is immutable.
    @usableFromInline internal typealias Output = Downstream.Input
    @usableFromInline internal typealias Failure = Downstream.Failure

    @usableFromInline let lock = Lock()
    /// The lock-free path for values, used while the subscriber's demand is unlimited and nothing
    /// waits: one of the ``FastPath`` constants. While it is `lent` or `delivering`, the machine is
    /// `.idle` with unlimited demand and nothing pending, and a sending thread that swaps `lent` for
    /// `delivering` holds the delivery right without the lock. Only a thread holding the lock lends
    /// the machine (`off` to `lent`) or takes it back (``revokeFastPath()``).
    @usableFromInline let fast = Atomic<Int>(FastPath.off)
    /// A subject's solo path that this conduit uses instead of ``fast`` (which then stays `off`), while
    /// it is its subject's only subscriber; see ``SoloPath``. Guarded by lock.
    @usableFromInline var soloPath: SoloPath?
    @usableFromInline var machine: SubjectConduitStateMachine<Downstream>  // Guarded by lock.
    @usableFromInline let name: String
    /// The subscriber. Not guarded by the lock but by the delivery right the state machine hands
    /// out: only the delivering thread reads it, and it is cleared by whoever ends the conduit
    /// when nobody is delivering (or by the delivering thread, once it sees the end). Kept in a box
    /// this conduit owns by hand (retained once in `init`, released by `releaseDownstream()` or
    /// `deinit`), so that reaching the subscriber copies and retains nothing: a copy of a subscriber
    /// such as `map`'s costs a retain of each of its references per value.
    #if SPOUT_CHECKED_EXCLUSIVITY
        @usableFromInline var downstreamBox: Unmanaged<DownstreamBox<Downstream>>?
    #else
        // Unchecked: bench/reactive.sh `subject`, `subject-var` (every value).
        @usableFromInline @exclusivity(unchecked) var downstreamBox: Unmanaged<DownstreamBox<Downstream>>?
    #endif
    /// The thread handing this conduit to its subscriber (in ``start()``), while it does so; set
    /// only for a current-value subject. A request that thread makes from inside
    /// `receive(subscription:)` gets the current value at once, inside `request`, as in Combine;
    /// any other thread's request waits for the hand-over to end. Guarded by lock.
    @usableFromInline var handoverThread: pthread_t?
    /// `request(_:)` forwards here, for the same reason as ``SubjectConduitBase/offer``.
    @usableFromInline var requestThunk: (Subscribers.Demand) -> Void = { _ in }

    /// - Parameters:
    ///   - latest: For a current-value subject, the value to deliver on the first demand; `nil` otherwise.
    ///   - keepsLatest: Whether a value offered without demand is kept (newest only) for the next demand.
    @inlinable
    internal init(
        downstream: Downstream,
        owner: any SubjectConduitOwner,
        latest: Output?,
        keepsLatest: Bool,
        name: String
    ) {
        downstreamBox = .passRetained(DownstreamBox(downstream))
        machine = SubjectConduitStateMachine(owner: owner, latest: latest, keepsLatest: keepsLatest)
        self.name = name
        super.init(
            offer: { base, value in
                unsafeDowncast(base, to: SubjectConduit<Downstream>.self).offerSpecialized(value)
            },
            deliverOnSoloPath: { base, value in
                // Demand is unlimited, so whatever the subscriber adds changes nothing.
                _ = unsafeDowncast(base, to: SubjectConduit<Downstream>.self).withDownstream { $0.receive(value) }
            }
        )
        requestThunk = { [unowned self] demand in self.requestSpecialized(demand) }
    }

    deinit {
        downstreamBox?.release()
    }

    @inlinable
    internal var description: String { name }

    @inlinable
    internal var customMirror: Mirror { Mirror(self, children: []) }

    /// Hands this conduit to the subscriber, then delivers what arrived meanwhile.
    ///
    /// The conduit starts in `.delivering`, owned by the subscribing thread, so that no other
    /// thread's value reaches the subscriber before `receive(subscription:)` returns. The one
    /// exception is a current-value subject's value, which a request made from inside
    /// `receive(subscription:)` gets at once, as in Combine (see ``handoverThread``).
    @inlinable
    internal func start() {
        let keepsLatest = machine.keepsLatest
        if keepsLatest { lock.withLock { handoverThread = pthread_self() } }
        withDownstream { $0.receive(subscription: self) }
        if keepsLatest { lock.withLock { handoverThread = nil } }
        drain(extraDemand: .none)
    }

    @inlinable
    func offerSpecialized(_ value: Output) {
        if fast.compareExchange(expected: FastPath.lent, desired: FastPath.delivering, ordering: .acquiring).exchanged {
            // Demand is unlimited, so whatever the subscriber adds changes nothing.
            _ = withDownstream { $0.receive(value) }
            if fast.compareExchange(expected: FastPath.delivering, desired: FastPath.lent, ordering: .releasing)
                .exchanged
            {
                return
            }
            // Revoked meanwhile: the revoking thread marked the machine as delivering, for this thread
            // to drain what arrived.
            fast.store(FastPath.off, ordering: .relaxed)
            drain(extraDemand: .none)
            return
        }
        guard
            let value = lock.withLock({ () -> Output? in
                revokeFastPath()
                return machine.valueOffered(value)
            })
        else { return }
        drain(extraDemand: withDownstream { $0.receive(value) })
    }

    /// Takes the machine back from the lock-free path. Call with the lock held, before any event.
    /// If a thread is delivering on that path, marks the machine as delivering: that thread drains
    /// when it returns.
    @inlinable
    func revokeFastPath() {
        let revoked: Bool
        if let soloPath {
            revoked = FastPath.revoke(soloPath.state)
        } else {
            revoked = FastPath.revoke(fast)
        }
        if revoked { machine.fastDeliveryRevoked() }
    }

    /// Lends the machine to the lock-free path (the subject's solo path, if this conduit uses one) if it
    /// can go there. Call with the lock held. The path is `off` then: a lendable machine is idle, and
    /// every lock holder that made it idle revoked the path first or was the delivering thread.
    @inlinable
    func lendToFastPathIfPossible() {
        guard machine.canLendToFastPath else { return }
        if let soloPath {
            soloPath.state.store(FastPath.lent, ordering: .releasing)
        } else {
            fast.store(FastPath.lent, ordering: .releasing)
        }
    }

    @inlinable
    override internal func useSoloPath(_ path: SoloPath?) {
        lock.withLock {
            revokeFastPath()
            soloPath = path
            lendToFastPathIfPossible()
        }
    }

    @inlinable
    override internal func soloDeliveryRevoked() {
        drain(extraDemand: .none)
    }

    @inlinable
    override internal func finish(_ completion: Subscribers.Completion<Failure>) {
        guard
            lock.withLock({ () -> Bool in
                revokeFastPath()
                return machine.completionOffered(completion)
            })
        else { return }
        withDownstream { $0.receive(completion: completion) }
        releaseDownstream()
    }

    @inlinable
    internal func request(_ demand: Subscribers.Demand) {
        requestThunk(demand)
    }

    @inlinable
    func requestSpecialized(_ demand: Subscribers.Demand) {
        if demand == .none {
            apiViolation("a subscription's demand must be greater than zero")
        }
        let action = lock.withLock {
            () -> (owner: (any SubjectConduitOwner)?, delivery: Output?, duringHandover: Bool) in
            revokeFastPath()
            let action = machine.demandRequested(demand)
            if let thread = handoverThread, pthread_equal(thread, pthread_self()) != 0 {
                // The subscriber asks from inside `receive(subscription:)`, on the thread that
                // holds the delivery right: it may have the current value now.
                return (action.owner, machine.valueForHandoverRequest(), true)
            }
            lendToFastPathIfPossible()
            return (action.owner, action.delivery, false)
        }
        action.owner?.conduitDidRequestDemand()
        guard let value = action.delivery else { return }
        let extra = withDownstream { $0.receive(value) }
        if action.duringHandover {
            // `start()` drains what waits once `receive(subscription:)` returns.
            if extra > 0 { lock.withLock { machine.demand += extra } }
        } else {
            drain(extraDemand: extra)
        }
    }

    @inlinable
    internal func cancel() {
        let action = lock.withLock { () -> (owner: (any SubjectConduitOwner)?, releaseDownstream: Bool) in
            revokeFastPath()
            return machine.cancelled()
        }
        if action.releaseDownstream {
            releaseDownstream()
        }
        action.owner?.conduitDidCancel(ObjectIdentifier(self))
    }

    /// Runs `body` with the subscriber, borrowed in place. Only the thread the state machine made the deliverer
    /// (or the one that moved it from `.idle` to `.terminal`) calls this.
    @inlinable
    func withDownstream<Result>(_ body: (Downstream) -> Result) -> Result {
        DownstreamBox.with(downstreamBox, body)
    }

    /// Drops the subscriber, outside the lock (its deinit may run). Same rule as ``downstreamBox``.
    @inlinable
    func releaseDownstream() {
        DownstreamBox.release(&downstreamBox)
    }

    /// Runs on the delivering thread after each call into the subscriber, until nothing is left.
    @inlinable
    func drain(extraDemand: Subscribers.Demand) {
        var extra = extraDemand
        while true {
            let action = lock.withLock { () -> SubjectConduitStateMachine<Downstream>.DrainAction in
                let action = machine.deliveryReturned(extraDemand: extra)
                lendToFastPathIfPossible()
                return action
            }
            switch consume action {
            case .stop(let release):
                if release { releaseDownstream() }
                return
            case .deliver(let value):
                extra = withDownstream { $0.receive(value) }
            case .complete(let completion):
                withDownstream { $0.receive(completion: completion) }
                releaseDownstream()
                return
            }
        }
    }
}

/// The demand and delivery state of one ``SubjectConduit``.
///
/// **Thread safety:** value type; its owner keeps it behind a lock.
@usableFromInline
internal struct SubjectConduitStateMachine<Downstream: Subscriber> {
    @usableFromInline internal typealias Output = Downstream.Input
    @usableFromInline internal typealias Failure = Downstream.Failure

    /// Who may call into the subscriber.
    @usableFromInline
    internal enum Phase {
        /// Nobody is delivering; the next thread with something to deliver becomes the deliverer.
        /// Next: `.delivering`, `.terminal`.
        case idle
        /// One thread is calling into the subscriber (or handing it the subscription); everything
        /// else queues for it. Next: `.idle`, `.terminal`.
        case delivering
        /// Completed or cancelled: nothing more is delivered. Final.
        case terminal
    }

    @usableFromInline
    internal enum DrainAction {
        /// Stop delivering; `release`: the conduit ended meanwhile, so drop the subscriber.
        case stop(release: Bool)
        case deliver(Output)
        /// Send the completion, then drop the subscriber.
        case complete(Subscribers.Completion<Failure>)
    }

    @usableFromInline var phase: Phase = .delivering
    /// Released when the phase becomes `.terminal`.
    @usableFromInline var owner: (any SubjectConduitOwner)?
    /// Demand not yet used; values in `pending` are already counted against it.
    @usableFromInline var demand: Subscribers.Demand = .none
    /// Values accepted while `.delivering`, in order. Empty in the other phases.
    @usableFromInline var pending = RingQueue<Output>()
    /// A completion that arrived while `.delivering`; sent after `pending` drains.
    @usableFromInline var pendingCompletion: Subscribers.Completion<Failure>?
    /// Current-value subjects: the newest value not yet delivered, for lack of demand.
    @usableFromInline var latest: Output?
    @usableFromInline let keepsLatest: Bool
    /// Whether the owner was already told about this subscriber's first demand.
    @usableFromInline var announcedDemand = false

    @inlinable
    internal init(owner: any SubjectConduitOwner, latest: Output?, keepsLatest: Bool) {
        self.owner = owner
        self.latest = latest
        self.keepsLatest = keepsLatest
    }

    /// - Returns: The value for the calling thread to deliver now, as the deliverer.
    @inlinable
    internal mutating func valueOffered(_ value: Output) -> Output? {
        guard phase != .terminal, pendingCompletion == nil else { return nil }
        guard demand > 0 else {
            if keepsLatest { latest = value }
            return nil
        }
        demand -= 1
        latest = nil
        if phase == .delivering {
            pending.append(value)
            return nil
        }
        phase = .delivering
        return value
    }

    /// - Returns: Whether the calling thread sends the completion now (then drops the subscriber).
    /// Whether the owner may lend this machine to its lock-free value path: idle, with unlimited
    /// demand and nothing waiting, so that a value needs only the delivery right.
    @inlinable
    internal var canLendToFastPath: Bool {
        phase == .idle && demand == .unlimited && pending.count == 0 && pendingCompletion == nil && latest == nil
    }

    /// The owner took the machine back while a thread delivers on the lock-free path: that thread
    /// holds the delivery right, and drains when it returns.
    @inlinable
    internal mutating func fastDeliveryRevoked() {
        guard phase == .idle else { internalInconsistency("fast delivery revoked in \(phase)") }
        phase = .delivering
    }

    @inlinable
    internal mutating func completionOffered(_ completion: Subscribers.Completion<Failure>) -> Bool {
        switch phase {
        case .terminal:
            return false
        case .delivering:
            if pendingCompletion == nil { pendingCompletion = completion }
            return false
        case .idle:
            terminate()
            return true
        }
    }

    @inlinable
    internal mutating func demandRequested(
        _ more: Subscribers.Demand
    ) -> (owner: (any SubjectConduitOwner)?, delivery: Output?) {
        guard phase != .terminal else { return (nil, nil) }
        demand += more
        var announceTo: (any SubjectConduitOwner)?
        if !announcedDemand {
            announcedDemand = true
            announceTo = owner
        }
        guard phase == .idle, demand > 0, let value = latest else { return (announceTo, nil) }
        latest = nil
        demand -= 1
        phase = .delivering
        return (announceTo, value)
    }

    /// - Returns: The owner to tell, unless the conduit had already terminated, and whether the
    ///   calling thread drops the subscriber (only if nobody is delivering to it).
    @inlinable
    internal mutating func cancelled() -> (owner: (any SubjectConduitOwner)?, releaseDownstream: Bool) {
        guard phase != .terminal else { return (nil, false) }
        let subject = owner
        let wasIdle = phase == .idle
        terminate()
        return (subject, wasIdle)
    }

    /// A request made from inside `receive(subscription:)` (the machine is `.delivering` for the
    /// hand-over): returns the current-value subject's value for that request to deliver at once,
    /// if there is demand for it and nothing else waits before it.
    @inlinable
    internal mutating func valueForHandoverRequest() -> Output? {
        guard phase == .delivering, pending.count == 0, pendingCompletion == nil, demand > 0, let value = latest else {
            return nil
        }
        latest = nil
        demand -= 1
        return value
    }

    /// The delivering thread came back from the subscriber with `extraDemand`.
    @inlinable
    internal mutating func deliveryReturned(extraDemand: Subscribers.Demand) -> DrainAction {
        switch phase {
        case .terminal:
            // Cancelled while this thread delivered: it still holds the delivery right, so it drops the subscriber.
            return .stop(release: true)
        case .idle:
            internalInconsistency("delivery returned while idle")
        case .delivering:
            break
        }
        demand += extraDemand
        if let value = pending.popFirst() {
            return .deliver(value)
        }
        if let completion = pendingCompletion {
            terminate()
            return .complete(completion)
        }
        if demand > 0, let value = latest {
            latest = nil
            demand -= 1
            return .deliver(value)
        }
        phase = .idle
        return .stop(release: false)
    }

    @inlinable
    mutating func terminate() {
        phase = .terminal
        owner = nil
        pending.removeAll()
        pendingCompletion = nil
        latest = nil
    }
}

/// The states of the lock-free value path of ``SubjectConduit`` and of flatMap's inner.
@usableFromInline
internal enum FastPath {
    /// Not in use: every event goes through the lock. Next: `lent`.
    @inlinable static var off: Int { 0 }
    /// The machine is lent to the path: the next value may be delivered without the lock.
    /// Next: `delivering`, `off`.
    @inlinable static var lent: Int { 1 }
    /// A thread is delivering a value on the path. Next: `lent`, `revoked`.
    @inlinable static var delivering: Int { 2 }
    /// Taken back by a lock holder while a thread delivers; that thread drains. Next: `off`.
    @inlinable static var revoked: Int { 3 }
}

extension FastPath {
    /// Takes a machine back from the lock-free path whose state is `fast`; call with the lock held,
    /// before any event. `lent` becomes `off`. `delivering` becomes `revoked`, and the answer is
    /// `true`: the caller marks its machine as delivering, and the thread on the path runs the
    /// delivery loop when it returns. `off`, or `revoked` by an earlier lock holder: the machine is
    /// already back. Shared by ``SubjectConduit`` and flatMap's inner.
    @inlinable
    static func revoke(_ fast: borrowing Atomic<Int>) -> Bool {
        while true {
            switch fast.load(ordering: .acquiring) {
            case lent:
                if fast.compareExchange(expected: lent, desired: off, ordering: .acquiring).exchanged { return false }
            case delivering:
                if fast.compareExchange(expected: delivering, desired: revoked, ordering: .acquiring).exchanged {
                    return true
                }
            default:
                return false
            }
        }
    }
}
