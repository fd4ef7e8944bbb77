import Synchronization

/// What a combining operator (`zip`, `combineLatest`) keeps of each side's values, and the rule
/// that turns them into outputs.
///
/// **Thread safety:** value type; kept inside ``CombiningStateMachine`` under its owner's lock.
///
/// The storages are `@usableFromInline` with inlinable members so that a client module's
/// specialized operator code also gets specialized storage code (cross-module optimization alone
/// did not specialize them).
@usableFromInline
internal protocol CombiningStorage {
    /// The tuple the operator publishes.
    associatedtype Output

    /// The operator's name, used as the subscription's description ("Zip", "CombineLatest").
    static var operatorName: String { get }

    /// Creates an empty storage.
    init()

    /// Takes the next output if one can be formed now: `zip` removes the oldest value of every
    /// side; `combineLatest` returns the latest values once after each change.
    mutating func takeOutput() -> Output?

    /// Whether no output can ever be formed again, given the sides that finished
    /// (bit `i` set = side `i` finished).
    func isExhausted(finishedSides: UInt8) -> Bool

    /// Whether ``takeOutput()`` would return an output now.
    var hasOutput: Bool { get }
}

/// The state of one subscription to a combining operator (`zip`, `combineLatest`) with two to four
/// upstream sides: the sides' values, the downstream demand, and who is delivering.
///
/// Demand is forwarded one for one: every downstream request goes to every side, so a side never
/// sends more values than downstream asked for in total. A side whose subscription arrives late
/// is sent the total requested so far.
///
/// **Ownership:** owned by ``CombiningInner``; holds the upstream subscriptions until it becomes
/// terminal, then drops them. The downstream subscriber is the inner's: the machine says which
/// thread may call it (the deliverer) and who drops it (see ``CombiningInner/downstreamBox``).
///
/// **Thread safety:** value type; every event runs under ``CombiningInner``'s lock.
@usableFromInline
internal struct CombiningStateMachine<Downstream: Subscriber, Storage: CombiningStorage>
where Downstream.Input == Storage.Output {
    @usableFromInline typealias Failure = Downstream.Failure

    @usableFromInline
    enum State {
        /// Nobody is delivering; values wait in storage for demand. Next: `.delivering`, `.terminal`.
        case idle
        /// One thread is inside the downstream's `receive(_:)`. Values and demand arriving meanwhile
        /// are recorded and picked up by that thread's loop; `pendingFailure` is a failure that
        /// arrived during the delivery and goes out when it ends. Next: `.idle`, `.terminal`.
        case delivering(pendingFailure: Failure?)
        /// Completed or cancelled; everything is released. Next: none.
        case terminal
    }

    /// What the owner does, outside the lock, after an event.
    @usableFromInline
    enum Action {
        case none
        /// Request the demand from each given subscription.
        case request(SubscriptionQuartet, Subscribers.Demand)
        /// Cancel a subscription that arrived when it is not wanted.
        case cancel(any Subscription)
        /// Cancel the upstream subscriptions; `releaseDownstream`: nobody is delivering, so the
        /// calling thread drops the downstream.
        case cancelUpstreams(SubscriptionQuartet, releaseDownstream: Bool)
        /// Forward the demand, then start delivering, as the deliverer.
        case requestAndDeliver(SubscriptionQuartet, Subscribers.Demand, Storage.Output)
        /// Cancel the remaining upstreams, then send the completion and drop the downstream.
        case complete(Subscribers.Completion<Failure>, cancel: SubscriptionQuartet)
    }

    /// What the delivering thread does next.
    @usableFromInline
    enum DeliveryAction {
        /// Send this output too.
        case deliver(Storage.Output)
        /// Forward this extra demand to the sides, then ask again.
        case forward(SubscriptionQuartet, Subscribers.Demand)
        /// Cancel the remaining upstreams, send the completion and stop.
        case complete(Subscribers.Completion<Failure>, cancel: SubscriptionQuartet)
        /// Stop delivering; `release`: the machine ended meanwhile (cancelled), so the delivering
        /// thread drops the downstream.
        case stop(release: Bool)
    }

    @usableFromInline var state: State = .idle
    @usableFromInline var storage = Storage()
    @usableFromInline var subscriptions = SubscriptionQuartet()
    /// Outstanding downstream demand.
    @usableFromInline var demand = Subscribers.Demand.none
    /// Everything downstream ever requested: what a late side is sent.
    @usableFromInline var totalRequested = Subscribers.Demand.none
    /// Bit `i` set = side `i` finished.
    @usableFromInline var finishedSides: UInt8 = 0

    @inlinable
    init() {}

    @inlinable
    mutating func subscribed(side: Int, _ subscription: any Subscription) -> Action {
        if case .terminal = state { return .cancel(subscription) }
        guard subscriptions[side] == nil, finishedSides & (1 << side) == 0 else { return .cancel(subscription) }
        subscriptions[side] = subscription
        guard totalRequested > 0 else { return .none }
        var single = SubscriptionQuartet()
        single[0] = subscription
        return .request(single, totalRequested)
    }

    @inlinable
    mutating func requested(_ newDemand: Subscribers.Demand) -> Action {
        guard newDemand > 0 else { apiViolation("demand must be greater than zero, got \(newDemand)") }
        switch state {
        case .terminal:
            return .none
        case .delivering:
            demand += newDemand
            totalRequested += newDemand
            return .request(subscriptions, newDemand)
        case .idle:
            demand += newDemand
            totalRequested += newDemand
            guard let output = nextOutput() else { return .request(subscriptions, newDemand) }
            state = .delivering(pendingFailure: nil)
            return .requestAndDeliver(subscriptions, newDemand, output)
        }
    }

    @inlinable
    /// - Returns: The output to start delivering, as the deliverer.
    ///   An optional rather than an ``Action``: this runs for every value, and a copy of the generic
    ///   multi-payload `Action` goes through value witnesses even in specialized code.
    mutating func received(_ store: (inout Storage) -> Void) -> Storage.Output? {
        switch state {
        case .terminal:
            return nil
        case .delivering:
            store(&storage)
            return nil
        case .idle:
            store(&storage)
            guard let output = nextOutput() else { return nil }
            state = .delivering(pendingFailure: nil)
            return output
        }
    }

    /// The delivering thread finished one `receive(_:)`, which returned `additional`.
    @inlinable
    mutating func delivered(_ additional: Subscribers.Demand) -> DeliveryAction {
        // Not delivering: cancelled while this thread delivered (the only way out of `.delivering`
        // but this thread's own steps), so it drops the downstream.
        guard case .delivering(let pendingFailure) = state else { return .stop(release: true) }
        if let pendingFailure {
            enterTerminal()
            return .complete(.failure(pendingFailure), cancel: SubscriptionQuartet())
        }
        if additional > 0 {
            demand += additional
            totalRequested += additional
            return .forward(subscriptions, additional)
        }
        if let output = nextOutput() {
            return .deliver(output)
        }
        if storage.isExhausted(finishedSides: finishedSides) {
            let remaining = subscriptions
            enterTerminal()
            return .complete(.finished, cancel: remaining)
        }
        state = .idle
        return .stop(release: false)
    }

    @inlinable
    mutating func completed(side: Int, _ completion: Subscribers.Completion<Failure>) -> Action {
        if case .terminal = state { return .none }
        subscriptions[side] = nil
        switch completion {
        case .finished:
            finishedSides |= 1 << side
            guard case .idle = state, storage.isExhausted(finishedSides: finishedSides) else {
                return .none
            }
            let remaining = subscriptions
            enterTerminal()
            return .complete(.finished, cancel: remaining)
        case .failure(let error):
            let remaining = subscriptions
            if case .delivering(let pendingFailure) = state {
                if pendingFailure == nil {
                    subscriptions = SubscriptionQuartet()
                    state = .delivering(pendingFailure: error)
                }
                return .cancelUpstreams(remaining, releaseDownstream: false)
            }
            enterTerminal()
            return .complete(.failure(error), cancel: remaining)
        }
    }

    @inlinable
    mutating func cancelled() -> Action {
        if case .terminal = state { return .none }
        let remaining = subscriptions
        let idle = if case .idle = state { true } else { false }
        enterTerminal()
        return .cancelUpstreams(remaining, releaseDownstream: idle)
    }

    /// Called right after an event made the calling thread the deliverer: whether that delivery can
    /// end without the lock. It can when, should nothing else happen meanwhile, ``delivered(_:)``
    /// would find nothing to do but go idle: demand is unlimited (what the downstream returns
    /// changes nothing but what the sides are asked), no output waits and the sides are not
    /// exhausted. The machine is then made `.idle` at once, and the owner marks the delivery as
    /// quiet; any event before it ends takes it back with ``quietDeliveryRevoked()``.
    @inlinable
    mutating func deliveringQuietly() -> Bool {
        guard case .delivering(.none) = state, demand == .unlimited, !storage.hasOutput,
            !storage.isExhausted(finishedSides: finishedSides)
        else { return false }
        state = .idle
        return true
    }

    /// An event arrived while a quiet delivery (see ``deliveringQuietly()``) runs: the machine is
    /// delivering again, and the delivering thread runs ``delivered(_:)`` when it returns.
    @inlinable
    mutating func quietDeliveryRevoked() {
        guard case .idle = state else { internalInconsistency("quiet delivery revoked while not idle") }
        state = .delivering(pendingFailure: nil)
    }

    @inlinable
    mutating func nextOutput() -> Storage.Output? {
        guard demand > 0, let output = storage.takeOutput() else { return nil }
        demand -= 1
        return output
    }

    @inlinable
    mutating func enterTerminal() {
        state = .terminal
        storage = Storage()
        subscriptions = SubscriptionQuartet()
    }
}

/// The subscription a combining operator (`zip`, `combineLatest`) hands downstream: it owns the
/// state machine and carries out its actions.
///
/// **Ownership:** retained by the downstream subscriber and by each side's subscriber; releases
/// the downstream and the upstream subscriptions on completion or cancel.
///
/// **Thread safety:** safe to call from any thread; deliveries are serialized.
@usableFromInline
internal final class CombiningInner<Downstream: Subscriber, Storage: CombiningStorage>: Subscription,
    CustomStringConvertible, CustomReflectable, CustomPlaygroundDisplayConvertible, @unchecked Sendable
where Downstream.Input == Storage.Output {
    // @unchecked Sendable: `machine` is only touched inside `lock`.
    @usableFromInline let lock = Lock()
    // Guarded by lock, which makes every access exclusive, so the dynamic exclusivity check (a
    // runtime call per access) is off.
    #if SPOUT_CHECKED_EXCLUSIVITY
        @usableFromInline var machine: CombiningStateMachine<Downstream, Storage>
    #else
        // Unchecked: bench/reactive.sh `zip`, `zip-mapped` (every side value and delivery).
        @usableFromInline @exclusivity(unchecked) var machine: CombiningStateMachine<Downstream, Storage>
    #endif
    /// The subscriber (see ``DownstreamBox``). Not guarded by the lock but by the delivery right the
    /// state machine hands out: only the delivering thread (or the one that moved the machine from
    /// `.idle` to the end) reads it, and it is dropped by whoever ends the machine while nobody
    /// delivers, or by the delivering thread once it sees the end; `deinit` drops it otherwise.
    #if SPOUT_CHECKED_EXCLUSIVITY
        @usableFromInline var downstreamBox: Unmanaged<DownstreamBox<Downstream>>?
    #else
        // Unchecked: bench/reactive.sh `zip`, `zip-mapped` (every output).
        @usableFromInline @exclusivity(unchecked) var downstreamBox: Unmanaged<DownstreamBox<Downstream>>?
    #endif

    /// Whether the current delivery ends without the lock (bench/reactive.sh `zip-mapped`): `off`,
    /// or, from the event that made a thread the deliverer of a quiet delivery (see
    /// ``CombiningStateMachine/deliveringQuietly()``) until that thread returns from the downstream,
    /// `delivering` (``FastPath``). While it is `delivering` the machine is already `.idle`, and every
    /// locked step first takes it back (``revokeQuietDelivery()``: `revoked`, the machine delivering
    /// again, for the delivering thread to carry on under the lock); otherwise the delivering thread
    /// swaps `delivering` for `off` and is done, one compare-and-swap instead of a locked step.
    @usableFromInline let quiet = Atomic<Int>(FastPath.off)

    @inlinable
    init(downstream: Downstream) {
        machine = CombiningStateMachine()
        downstreamBox = .passRetained(DownstreamBox(downstream))
    }

    deinit {
        downstreamBox?.release()
    }

    /// Runs `body` with the subscriber, borrowed in place. Only the thread the state machine made
    /// the deliverer (or the one that moved it from `.idle` to the end) calls this.
    @inlinable
    func withDownstream<Result>(_ body: (Downstream) -> Result) -> Result {
        DownstreamBox.with(downstreamBox, body)
    }

    /// Drops the subscriber, outside the lock (its deinit may run). Same rule as ``downstreamBox``.
    @inlinable
    func releaseDownstream() {
        DownstreamBox.release(&downstreamBox)
    }

    @inlinable
    var description: String { Storage.operatorName }

    @inlinable
    var customMirror: Mirror { Mirror(self, children: []) }

    @inlinable
    var playgroundDescription: Any { description }

    /// Runs one event of the machine under the lock, after taking back a quiet delivery.
    @inlinable
    func locked<Result>(_ body: (inout CombiningStateMachine<Downstream, Storage>) -> Result) -> Result {
        lock.withLock {
            revokeQuietDelivery()
            return body(&machine)
        }
    }

    /// Takes back a quiet delivery that is running (see ``quiet``). Call with the lock held, before
    /// any event.
    @inlinable
    func revokeQuietDelivery() {
        if quiet.load(ordering: .acquiring) == FastPath.delivering,
            quiet.compareExchange(expected: FastPath.delivering, desired: FastPath.revoked, ordering: .acquiring)
                .exchanged
        {
            machine.quietDeliveryRevoked()
        }
    }

    /// After an event made the calling thread the deliverer: marks the delivery quiet if it can be.
    /// Call with the lock held.
    @inlinable
    func markQuietIfPossible(_ machine: inout CombiningStateMachine<Downstream, Storage>) {
        if machine.deliveringQuietly() {
            quiet.store(FastPath.delivering, ordering: .relaxed)
        }
    }

    @inlinable
    func request(_ demand: Subscribers.Demand) {
        let action = locked { $0.requested(demand) }
        perform(consume action)
    }

    @inlinable
    func cancel() {
        let action = locked { $0.cancelled() }
        perform(consume action)
    }

    @inlinable
    func sideSubscribed(_ side: Int, _ subscription: any Subscription) {
        let action = locked { $0.subscribed(side: side, subscription) }
        perform(consume action)
    }

    @inlinable
    func sideReceived(_ store: (inout Storage) -> Void) {
        let output = locked { machine -> Storage.Output? in
            let output = machine.received(store)
            if output != nil { markQuietIfPossible(&machine) }
            return output
        }
        if let output {
            deliver(output)
        }
    }

    @inlinable
    func sideCompleted(_ side: Int, _ completion: Subscribers.Completion<Downstream.Failure>) {
        let action = locked { $0.completed(side: side, completion) }
        perform(consume action)
    }

    /// The subscriber for one upstream side; `store` records a value of that side in the storage.
    ///
    /// Call it from `receive(subscriber:)`, where the types are concrete, so that the closures it
    /// makes (and the per-value path through them) are specialized.
    @inlinable
    func makeSide<Input>(
        _ side: Int,
        store: @escaping (inout Storage, Input) -> Void
    ) -> RelaySubscriber<Input, Downstream.Failure> {
        RelaySubscriber(
            Storage.operatorName,
            onSubscription: { self.sideSubscribed(side, $0) },
            onValue: { value in
                self.sideReceived { store(&$0, value) }
                return .none
            },
            onCompletion: { self.sideCompleted(side, $0) }
        )
    }

    @inlinable
    func perform(_ action: consuming CombiningStateMachine<Downstream, Storage>.Action) {
        switch consume action {
        case .none:
            break
        case .request(let subscriptions, let demand):
            subscriptions.request(demand)
        case .cancel(let subscription):
            subscription.cancel()
        case .cancelUpstreams(let subscriptions, let releaseDownstream):
            if releaseDownstream { self.releaseDownstream() }
            subscriptions.cancel()
        case .requestAndDeliver(let subscriptions, let demand, let output):
            subscriptions.request(demand)
            deliver(output)
        case .complete(let completion, let subscriptions):
            subscriptions.cancel()
            withDownstream { $0.receive(completion: completion) }
            releaseDownstream()
        }
    }

    /// The delivery loop: one thread at a time runs it, so downstream calls never overlap, and
    /// values or demand arriving re-entrantly are picked up here instead of recursing.
    @inlinable
    func deliver(_ first: Storage.Output) {
        var additional = withDownstream { $0.receive(first) }
        while true {
            if quiet.load(ordering: .relaxed) != FastPath.off {
                if quiet.compareExchange(expected: FastPath.delivering, desired: FastPath.off, ordering: .releasing)
                    .exchanged
                {
                    // Nothing happened meanwhile: the machine is idle already. Demand is unlimited, so
                    // what the downstream returned only goes to the sides, as a request would.
                    if additional > 0 { request(additional) }
                    return
                }
                // Taken back: the revoking thread made the machine deliver again.
                quiet.store(FastPath.off, ordering: .relaxed)
            }
            let action = locked { machine -> CombiningStateMachine<Downstream, Storage>.DeliveryAction in
                let action = machine.delivered(additional)
                if case .deliver = action { markQuietIfPossible(&machine) }
                return action
            }
            switch consume action {
            case .deliver(let output):
                additional = withDownstream { $0.receive(output) }
            case .forward(let subscriptions, let demand):
                subscriptions.request(demand)
                additional = .none
            case .complete(let completion, let subscriptions):
                subscriptions.cancel()
                withDownstream { $0.receive(completion: completion) }
                releaseDownstream()
                return
            case .stop(let release):
                if release { releaseDownstream() }
                return
            }
        }
    }
}
