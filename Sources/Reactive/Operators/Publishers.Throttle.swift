extension Publisher {
    /// Publishes either the most-recent or first element published by the upstream publisher in the
    /// specified time interval.
    ///
    /// As Combine does: a value that arrives while no emission is pending schedules one — at once (on
    /// `scheduler`) if `interval` has passed since the last emission, else for the instant it will
    /// have — and takes one unit of downstream's demand for it; a value that arrives while downstream
    /// has no demand is dropped, and nothing is scheduled for it. Values that arrive while the emission
    /// is pending replace the pending value (`latest: true`) or are dropped (`latest: false`), so a
    /// burst before the first emission yields one value, its last or its first. An emission of a value
    /// reads `scheduler.now` as the start of the next interval. Upstream is asked for an unlimited
    /// number of values. A completion goes out with the pending emission if there is one (after its
    /// value), else at once on `scheduler`; whatever upstream sends after completing is ignored.
    ///
    ///     let scheduler = VirtualTimeScheduler(), subject = PassthroughSubject<Int, Never>()
    ///     let c = subject.throttle(for: .seconds(1), scheduler: scheduler, latest: true).sink { print($0) }
    ///     [1, 2, 3].forEach(subject.send); scheduler.advance(by: .seconds(1))
    ///     // Prints: 1 3 (one per line)
    ///
    /// - Parameters:
    ///   - interval: The interval at which to find and emit either the most recent or the first element.
    ///   - scheduler: The scheduler on which to publish elements.
    ///   - latest: Whether to publish the most recent element (`true`) or the first one (`false`).
    /// - Returns: A publisher that emits either the most-recent or first element received during the interval.
    public func throttle<S: Scheduler>(
        for interval: S.SchedulerTimeType.Stride,
        scheduler: S,
        latest: Bool
    ) -> Publishers.Throttle<Self, S> {
        Publishers.Throttle(upstream: self, interval: interval, scheduler: scheduler, latest: latest)
    }
}

extension Publishers {
    /// A publisher that publishes either the most-recent or first element published by the upstream
    /// publisher in a specified time interval.
    ///
    /// **Ownership:** a value; each subscription is retained by its subscriber until completion or
    /// cancel, and by its scheduled deliveries and timer until they have run or been cancelled.
    ///
    /// **Thread safety:** value type; its subscriptions are safe to call from any thread.
    public struct Throttle<Upstream: Publisher, Context: Scheduler>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// The interval in which to find and emit the most recent element.
        public let interval: Context.SchedulerTimeType.Stride

        /// The scheduler on which to publish elements.
        public let scheduler: Context

        /// Whether to publish the most recent element (`true`) or the first one (`false`).
        public let latest: Bool

        /// Creates a publisher that emits at most one of `upstream`'s values per `interval`.
        public init(upstream: Upstream, interval: Context.SchedulerTimeType.Stride, scheduler: Context, latest: Bool) {
            self.upstream = upstream
            self.interval = interval
            self.scheduler = scheduler
            self.latest = latest
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.subscribe(Inner(publisher: self, downstream: subscriber))
        }
    }
}

extension Publishers.Throttle {
    /// The subscription of `throttle`: holds the pending value and when the last emission was; the
    /// emissions run on the scheduler, serialized by a ``ScheduledDelivery``.
    ///
    /// **Ownership:** retained by the upstream publisher, the downstream subscriber and its pending
    /// scheduled emission; it drops its neighbours on completion or cancel.
    ///
    /// **Thread safety:** safe to call from any thread.
    private final class Inner<Downstream: Subscriber>: Subscriber, Subscription, ScheduledDeliverer,
        CustomStringConvertible, CustomReflectable, @unchecked Sendable
    where Downstream.Input == Output, Downstream.Failure == Failure {
        // @unchecked Sendable: `machine` is only touched inside `lock`; everything else is immutable.
        typealias Input = Upstream.Output
        typealias Failure = Upstream.Failure
        typealias Machine = ThrottleStateMachine<Downstream, Context.SchedulerTimeType>

        private let scheduler: Context
        private let lock = Lock()
        private var machine: Machine  // Guarded by lock.

        init(publisher: Publishers.Throttle<Upstream, Context>, downstream: Downstream) {
            scheduler = publisher.scheduler
            machine = Machine(downstream: downstream, interval: publisher.interval, latest: publisher.latest)
        }

        var description: String { "Throttle" }

        var customMirror: Mirror { Mirror(self, children: []) }

        func withDelivery<Result>(_ body: (inout ScheduledDelivery<Downstream>) -> Result) -> Result {
            lock.withLock { body(&machine.delivery) }
        }

        func receive(subscription: any Subscription) {
            acceptSubscription(subscription)
        }

        func receive(_ input: Input) -> Subscribers.Demand {
            let now = scheduler.now
            switch lock.withLock({ machine.valueReceived(input, now: now) }) {
            case .none:
                break
            case .emitNow:
                scheduler.schedule { self.emit() }
            case .emit(let due):
                scheduler.schedule(after: due, tolerance: scheduler.minimumTolerance) { self.emit() }
            }
            return .none
        }

        func receive(completion: Subscribers.Completion<Failure>) {
            guard lock.withLock({ machine.completionReceived(completion) }) else { return }
            scheduler.schedule { self.emit() }
        }

        func request(_ demand: Subscribers.Demand) {
            demandArrived(demand)
        }

        func cancel() {
            lock.withLock { machine.cancelled() }?.cancel()
        }

        /// A scheduled emission ran: the pending value and a pending completion go out, and an emitted
        /// value starts the next interval now (the only case that reads `now`, as in Combine).
        private func emit() {
            let now = lock.withLock { machine.emissionStartsInterval } ? scheduler.now : nil
            deliver(lock.withLock { machine.emissionDue(now: now) })
        }
    }
}

/// The state of a `throttle` subscription: the pending value, the instant of the last emission, and
/// the ``ScheduledDelivery`` core (neighbours, demand, queued events).
///
/// **Ownership:** value type, stored in its subscription.
///
/// **Thread safety:** value type; not shared. Guarded by its subscription's lock.
internal struct ThrottleStateMachine<Downstream: Subscriber, Time: Strideable> {
    /// What the owner must schedule about an upstream value.
    enum ValueAction {
        /// Nothing: an emission is pending already (the value replaced the pending one or was dropped).
        case none
        /// An emission at the scheduler's next opportunity.
        case emitNow
        /// An emission at `due`, when the interval since the last emission has passed.
        case emit(due: Time)
    }

    private let interval: Time.Stride
    private let latest: Bool
    var delivery: ScheduledDelivery<Downstream>
    /// The value the pending emission will deliver.
    private var pending: Downstream.Input?
    /// Whether an emission is scheduled and has not run.
    private var isEmissionScheduled = false
    /// The completion the pending emission delivers after the value.
    private var pendingCompletion: Subscribers.Completion<Downstream.Failure>?
    /// When the last emission ran; `nil` before the first.
    private var lastEmission: Time?

    init(downstream: Downstream, interval: Time.Stride, latest: Bool) {
        delivery = ScheduledDelivery(downstream: downstream, demandMode: .counted)
        self.interval = interval
        self.latest = latest
    }

    mutating func valueReceived(_ value: Downstream.Input, now: Time) -> ValueAction {
        // After upstream's completion (a misbehaving upstream) and without demand, as in Combine, a
        // value is dropped; a pending value is replaced only while there is demand, too.
        guard delivery.isActive, pendingCompletion == nil, delivery.demand > 0 else { return .none }
        if isEmissionScheduled {
            if latest { pending = value }
            return .none
        }
        // The value is owed this unit of demand from now on, whatever downstream asks meanwhile.
        _ = delivery.takeDemand()
        pending = value
        isEmissionScheduled = true
        if let lastEmission {
            let due = lastEmission.advanced(by: interval)
            if now < due { return .emit(due: due) }
        }
        return .emitNow
    }

    /// Upstream completed: returns whether an emission must be scheduled now for the completion;
    /// with an emission pending, the completion waits for it.
    mutating func completionReceived(_ completion: Subscribers.Completion<Downstream.Failure>) -> Bool {
        guard delivery.isActive, pendingCompletion == nil else { return false }
        pendingCompletion = completion
        if isEmissionScheduled { return false }
        isEmissionScheduled = true
        return true
    }

    /// Whether the pending emission is of a value alone, which starts the next interval.
    var emissionStartsInterval: Bool {
        isEmissionScheduled && pending != nil && pendingCompletion == nil
    }

    /// An emission ran: queues the pending value (its demand was taken when it was scheduled) and
    /// completion; returns the first delivery if the caller is to deliver. `now` is the emission's
    /// instant when it was read (see ``emissionStartsInterval``).
    mutating func emissionDue(now: Time?) -> ScheduledDelivery<Downstream>.Delivery? {
        guard isEmissionScheduled else { return nil }
        isEmissionScheduled = false
        if let now, pending != nil, pendingCompletion == nil { lastEmission = now }
        var credits = 0
        if let value = pending.take() {
            delivery.enqueue(value)
            credits += 1
        }
        if let completion = pendingCompletion.take(), delivery.enqueueCompletion(completion) {
            credits += 1
        }
        // This action is the credit of each event it queued: the first may make it the deliverer, the
        // second then waits in that deliverer's loop.
        var first: ScheduledDelivery<Downstream>.Delivery?
        for _ in 0..<credits {
            let next = delivery.creditArrived()
            if first == nil { first = next }
        }
        return first
    }

    /// Downstream cancelled: returns the upstream subscription to cancel.
    mutating func cancelled() -> (any Subscription)? {
        pending = nil
        pendingCompletion = nil
        isEmissionScheduled = false
        return delivery.cancelled()
    }
}
