/// What a ``SubjectConduit`` tells the subject that created it.
///
/// **Thread safety:** implementations are safe to call from any thread.
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
internal class SubjectConduitBase<Output, Failure: Error>: @unchecked Sendable {
    // @unchecked Sendable: no state here; the subclass guards its state with its lock.

    /// Offers a value; it is delivered only if the subscriber has demand for it.
    ///
    /// A closure set by the subclass's `init` rather than an overridden method: `init` is called
    /// with concrete types, so the closure's body is specialized, and the per-value path runs no
    /// unspecialized generic code. Set once, before the conduit is shared.
    internal final var offer: (Output) -> Void = { _ in }

    internal init() {}

    /// Delivers the completion after any values already accepted.
    internal func finish(_ completion: Subscribers.Completion<Failure>) {
        internalInconsistency("abstract SubjectConduitBase.finish called")
    }
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
internal final class SubjectConduit<Downstream: Subscriber>: SubjectConduitBase<Downstream.Input, Downstream.Failure>,
    Subscription, CustomStringConvertible, CustomReflectable, @unchecked Sendable
{
    // @unchecked Sendable: `machine` is only touched inside `lock`; `name` is immutable.
    internal typealias Output = Downstream.Input
    internal typealias Failure = Downstream.Failure

    private let lock = Lock()
    /// Heap storage rather than a stored `var`, so that each access under the lock skips Swift's
    /// dynamic exclusivity check (the lock already makes access exclusive). Freed in `deinit`.
    private let machine: UnsafeMutablePointer<SubjectConduitStateMachine<Downstream>>  // Guarded by lock.
    private let name: String
    /// `request(_:)` forwards here, for the same reason as ``SubjectConduitBase/offer``.
    private var requestThunk: (Subscribers.Demand) -> Void = { _ in }

    /// - Parameters:
    ///   - latest: For a current-value subject, the value to deliver on the first demand; `nil` otherwise.
    ///   - keepsLatest: Whether a value offered without demand is kept (newest only) for the next demand.
    internal init(
        downstream: Downstream,
        owner: any SubjectConduitOwner,
        latest: Output?,
        keepsLatest: Bool,
        name: String
    ) {
        machine = .allocate(capacity: 1)
        machine.initialize(
            to: SubjectConduitStateMachine(
                downstream: downstream,
                owner: owner,
                latest: latest,
                keepsLatest: keepsLatest
            )
        )
        self.name = name
        super.init()
        offer = { [unowned(unsafe) self] value in self.offerSpecialized(value) }
        requestThunk = { [unowned(unsafe) self] demand in self.requestSpecialized(demand) }
    }

    deinit {
        machine.deinitialize(count: 1)
        machine.deallocate()
    }

    internal var description: String { name }

    internal var customMirror: Mirror { Mirror(self, children: []) }

    /// Hands this conduit to the subscriber, then delivers what arrived meanwhile.
    ///
    /// The conduit starts in `.delivering`, owned by the subscribing thread, so that nothing
    /// reaches the subscriber before `receive(subscription:)` returns.
    internal func start(_ downstream: Downstream) {
        downstream.receive(subscription: self)
        drain(extraDemand: .none)
    }

    private func offerSpecialized(_ value: Output) {
        let action = lock.withLock { machine.pointee.valueOffered(value) }
        guard case .deliver(let downstream, let value) = action else { return }
        drain(extraDemand: downstream.receive(value))
    }

    override internal func finish(_ completion: Subscribers.Completion<Failure>) {
        let downstream = lock.withLock { machine.pointee.completionOffered(completion) }
        downstream?.receive(completion: completion)
    }

    internal func request(_ demand: Subscribers.Demand) {
        requestThunk(demand)
    }

    private func requestSpecialized(_ demand: Subscribers.Demand) {
        if demand == .none {
            apiViolation("a subscription's demand must be greater than zero")
        }
        let action = lock.withLock { machine.pointee.demandRequested(demand) }
        action.owner?.conduitDidRequestDemand()
        if let (downstream, value) = action.delivery {
            drain(extraDemand: downstream.receive(value))
        }
    }

    internal func cancel() {
        let owner = lock.withLock { machine.pointee.cancelled() }
        owner?.conduitDidCancel(ObjectIdentifier(self))
    }

    /// Runs on the delivering thread after each call into the subscriber, until nothing is left.
    private func drain(extraDemand: Subscribers.Demand) {
        var extra = extraDemand
        while true {
            switch lock.withLock({ machine.pointee.deliveryReturned(extraDemand: extra) }) {
            case .stop:
                return
            case .deliver(let downstream, let value):
                extra = downstream.receive(value)
            case .complete(let downstream, let completion):
                downstream.receive(completion: completion)
                return
            }
        }
    }
}

/// The demand and delivery state of one ``SubjectConduit``.
///
/// **Thread safety:** value type; its owner keeps it behind a lock.
internal struct SubjectConduitStateMachine<Downstream: Subscriber> {
    internal typealias Output = Downstream.Input
    internal typealias Failure = Downstream.Failure

    /// Who may call into the subscriber.
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

    internal enum Delivery {
        case none
        case deliver(Downstream, Output)
    }

    internal enum DrainAction {
        case stop
        case deliver(Downstream, Output)
        case complete(Downstream, Subscribers.Completion<Failure>)
    }

    private var phase: Phase = .delivering
    /// Released when the phase becomes `.terminal`.
    private var downstream: Downstream?
    /// Released when the phase becomes `.terminal`.
    private var owner: (any SubjectConduitOwner)?
    /// Demand not yet used; values in `pending` are already counted against it.
    private var demand: Subscribers.Demand = .none
    /// Values accepted while `.delivering`, in order. Empty in the other phases.
    private var pending = SubjectConduitQueue<Output>()
    /// A completion that arrived while `.delivering`; sent after `pending` drains.
    private var pendingCompletion: Subscribers.Completion<Failure>?
    /// Current-value subjects: the newest value not yet delivered, for lack of demand.
    private var latest: Output?
    private let keepsLatest: Bool
    /// Whether the owner was already told about this subscriber's first demand.
    private var announcedDemand = false

    internal init(downstream: Downstream, owner: any SubjectConduitOwner, latest: Output?, keepsLatest: Bool) {
        self.downstream = downstream
        self.owner = owner
        self.latest = latest
        self.keepsLatest = keepsLatest
    }

    internal mutating func valueOffered(_ value: Output) -> Delivery {
        guard phase != .terminal, pendingCompletion == nil else { return .none }
        guard demand > 0 else {
            if keepsLatest { latest = value }
            return .none
        }
        demand -= 1
        latest = nil
        if phase == .delivering {
            pending.append(value)
            return .none
        }
        phase = .delivering
        guard let downstream else { internalInconsistency("no subscriber while \(phase)") }
        return .deliver(downstream, value)
    }

    /// - Returns: The subscriber to send the completion to now, if nobody is delivering.
    internal mutating func completionOffered(_ completion: Subscribers.Completion<Failure>) -> Downstream? {
        switch phase {
        case .terminal:
            return nil
        case .delivering:
            if pendingCompletion == nil { pendingCompletion = completion }
            return nil
        case .idle:
            let subscriber = downstream
            terminate()
            return subscriber
        }
    }

    internal mutating func demandRequested(
        _ more: Subscribers.Demand
    ) -> (owner: (any SubjectConduitOwner)?, delivery: (Downstream, Output)?) {
        guard phase != .terminal else { return (nil, nil) }
        demand += more
        var announceTo: (any SubjectConduitOwner)?
        if !announcedDemand {
            announcedDemand = true
            announceTo = owner
        }
        guard phase == .idle, let value = latest, let downstream else { return (announceTo, nil) }
        latest = nil
        demand -= 1
        phase = .delivering
        return (announceTo, (downstream, value))
    }

    /// - Returns: The owner to tell, unless the conduit had already terminated.
    internal mutating func cancelled() -> (any SubjectConduitOwner)? {
        guard phase != .terminal else { return nil }
        let subject = owner
        terminate()
        return subject
    }

    /// The delivering thread came back from the subscriber with `extraDemand`.
    internal mutating func deliveryReturned(extraDemand: Subscribers.Demand) -> DrainAction {
        switch phase {
        case .terminal:
            return .stop
        case .idle:
            internalInconsistency("delivery returned while idle")
        case .delivering:
            break
        }
        demand += extraDemand
        guard let downstream else { internalInconsistency("no subscriber while delivering") }
        if let value = pending.popFirst() {
            return .deliver(downstream, value)
        }
        if let completion = pendingCompletion {
            terminate()
            return .complete(downstream, completion)
        }
        if demand > 0, let value = latest {
            latest = nil
            demand -= 1
            return .deliver(downstream, value)
        }
        phase = .idle
        return .stop
    }

    private mutating func terminate() {
        phase = .terminal
        downstream = nil
        owner = nil
        pending.removeAll()
        pendingCompletion = nil
        latest = nil
    }
}

/// A first-in first-out ring of values waiting for a subject's delivering thread.
///
/// - Complexity: `append` and `popFirst` are amortized O(1); the storage grows by doubling
///   and is only allocated once something has to wait.
///
/// **Thread safety:** value type; not shared.
internal struct SubjectConduitQueue<Element> {
    private var storage: [Element?] = []
    private var head = 0
    private var count = 0

    internal mutating func append(_ element: Element) {
        if count == storage.count {
            grow()
        }
        storage[(head + count) % storage.count] = element
        count += 1
    }

    internal mutating func popFirst() -> Element? {
        guard count > 0 else { return nil }
        let element = storage[head].take()
        head = (head + 1) % storage.count
        count -= 1
        return element
    }

    internal mutating func removeAll() {
        guard count > 0 || !storage.isEmpty else { return }
        storage = []
        head = 0
        count = 0
    }

    private mutating func grow() {
        var grown = [Element?](repeating: nil, count: Swift.max(4, storage.count * 2))
        for offset in 0..<count {
            grown[offset] = storage[(head + offset) % storage.count].take()
        }
        storage = grown
        head = 0
    }
}
