extension Publisher {
    /// Terminates publishing if the upstream publisher exceeds the specified time interval without
    /// producing an element.
    ///
    /// The timer starts at subscription and restarts with every value. When it runs out, the
    /// subscription to upstream is cancelled and the publisher fails with `customError()`, or
    /// finishes normally if there is no `customError`. Values and the completion are delivered on
    /// `scheduler`, in order; requests go straight upstream (a demand of zero too, as in Combine).
    /// As in Combine, the timer starts before downstream has its subscription, and each value
    /// restarts it before the value is scheduled. After `cancel()` nothing more reaches downstream,
    /// not even a completion already scheduled (Combine may still deliver it; docs/REACTIVE.md
    /// explains the choice).
    ///
    ///     let scheduler = VirtualTimeScheduler(), subject = PassthroughSubject<Int, Never>()
    ///     let c = subject.timeout(.seconds(1), scheduler: scheduler).sink(receiveCompletion: { print($0) }) { _ in }
    ///     scheduler.advance(by: .seconds(1))
    ///     // Prints: finished
    ///
    /// - Parameters:
    ///   - interval: The maximum time interval the publisher can go without emitting an element.
    ///   - scheduler: The scheduler on which to deliver events and run the timer.
    ///   - options: Scheduler options that customize the delivery of elements.
    ///   - customError: A closure that produces the error to fail with on timeout; `nil` finishes instead.
    /// - Returns: A publisher that terminates if the specified interval elapses with no events received.
    public func timeout<S: Scheduler>(
        _ interval: S.SchedulerTimeType.Stride,
        scheduler: S,
        options: S.SchedulerOptions? = nil,
        customError: (() -> Failure)? = nil
    ) -> Publishers.Timeout<Self, S> {
        Publishers.Timeout(
            upstream: self,
            interval: interval,
            scheduler: scheduler,
            options: options,
            customError: customError
        )
    }
}

extension Publishers {
    /// A publisher that terminates if its upstream goes a given interval without producing an element.
    ///
    /// **Ownership:** a value; each subscription is retained by its subscriber until completion or
    /// cancel, and by its scheduled deliveries and timer until they have run or been cancelled.
    ///
    /// **Thread safety:** value type; its subscriptions are safe to call from any thread.
    public struct Timeout<Upstream: Publisher, Context: Scheduler>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// The maximum time interval the publisher can go without emitting an element.
        public let interval: Context.SchedulerTimeType.Stride

        /// The scheduler on which to deliver events.
        public let scheduler: Context

        /// Scheduler options that customize the delivery of elements.
        public let options: Context.SchedulerOptions?

        /// A closure that produces the error to fail with on timeout; `nil` finishes normally instead.
        public let customError: (() -> Upstream.Failure)?

        /// Creates a publisher that fails (or finishes) when `upstream` is quiet for `interval`.
        public init(
            upstream: Upstream,
            interval: Context.SchedulerTimeType.Stride,
            scheduler: Context,
            options: Context.SchedulerOptions?,
            customError: (() -> Upstream.Failure)?
        ) {
            self.upstream = upstream
            self.interval = interval
            self.scheduler = scheduler
            self.options = options
            self.customError = customError
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.subscribe(Inner(publisher: self, downstream: subscriber))
        }
    }
}

extension Publishers.Timeout {
    /// The subscription of `timeout`: relays events on the scheduler and runs a cancellable timer that is
    /// re-armed by every upstream value.
    ///
    /// **Ownership:** retained by the upstream publisher, the downstream subscriber, its scheduled
    /// deliveries and its timer; it drops its neighbours and cancels its timer on completion or cancel.
    ///
    /// **Thread safety:** safe to call from any thread.
    private final class Inner<Downstream: Subscriber>: Subscriber, Subscription, ScheduledDeliverer,
        CustomStringConvertible,
        CustomReflectable, @unchecked Sendable
    where Downstream.Input == Output, Downstream.Failure == Failure {
        // @unchecked Sendable: `machine` is only touched inside `lock`; everything else is immutable.
        typealias Input = Upstream.Output
        typealias Failure = Upstream.Failure
        typealias Machine = TimeoutStateMachine<Downstream>

        private let interval: Context.SchedulerTimeType.Stride
        private let scheduler: Context
        private let options: Context.SchedulerOptions?
        private let customError: (() -> Upstream.Failure)?
        private let lock = Lock()
        private var machine: Machine  // Guarded by lock.

        init(publisher: Publishers.Timeout<Upstream, Context>, downstream: Downstream) {
            interval = publisher.interval
            scheduler = publisher.scheduler
            options = publisher.options
            customError = publisher.customError
            machine = Machine(downstream: downstream)
        }

        var description: String { "Timeout" }

        var customMirror: Mirror { Mirror(self, children: []) }

        func withDelivery<Result>(_ body: (inout ScheduledDelivery<Downstream>) -> Result) -> Result {
            lock.withLock { body(&machine.delivery) }
        }

        func receive(subscription: any Subscription) {
            guard let downstream = lock.withLock({ machine.subscriptionReceived(subscription) }) else {
                subscription.cancel()
                return
            }
            // The timer starts before downstream has the subscription, as in Combine: a value
            // upstream sends at once, from inside a request, then restarts it.
            if let generation = lock.withLock({ machine.timerWanted() }) {
                armTimer(generation)
            }
            downstream.receive(subscription: self)
            if lock.withLock({ machine.handOverFinished() }) {
                // The timer ran out during the hand-over (an immediate scheduler): it ends the stream now.
                finishTimedOut()
            }
        }

        func receive(_ input: Input) -> Subscribers.Demand {
            guard let (generation, previous) = lock.withLock({ machine.valueReceived(input) }) else { return .none }
            previous?.cancel()
            // The timer restarts before the value is scheduled, in Combine's order.
            armTimer(generation)
            scheduler.schedule(options: options) { self.creditArrived() }
            return .none
        }

        func receive(completion: Subscribers.Completion<Failure>) {
            let (accepted, timer) = lock.withLock { machine.completionReceived(completion) }
            guard accepted else { return }
            timer?.cancel()
            scheduler.schedule(options: options) { self.creditArrived() }
        }

        func request(_ demand: Subscribers.Demand) {
            demandArrived(demand)
        }

        func cancel() {
            let (upstream, timer) = lock.withLock { machine.cancelled() }
            timer?.cancel()
            upstream?.cancel()
        }

        private func armTimer(_ generation: UInt64) {
            let cancellable = scheduler.scheduleSlotTimer(after: interval, options: options) {
                self.timerFired(generation)
            }
            lock.withLock { machine.timerScheduled(cancellable, generation: generation) }?.cancel()
        }

        private func timerFired(_ generation: UInt64) {
            guard let (upstream, timer, duringHandOver) = lock.withLock({ machine.timerFired(generation: generation) })
            else { return }
            timer?.cancel()
            upstream.cancel()
            // During the hand-over, downstream must have its subscription before the completion.
            if !duringHandOver { finishTimedOut() }
        }

        /// Queues the timeout's completion and delivers it: this runs on the scheduler already (in
        /// the timer's action, or in `receive(subscription:)` called from one), so it is its credit.
        private func finishTimedOut() {
            let completion: Subscribers.Completion<Failure> = customError.map { .failure($0()) } ?? .finished
            let queued = lock.withLock { machine.delivery.enqueueCompletion(completion) }
            if queued { creditArrived() }
        }
    }
}

/// The state of a `timeout` subscription: its timer, and the ``ScheduledDelivery`` core (neighbours,
/// queued events; demand goes straight upstream).
///
/// **Ownership:** value type, stored in its subscription.
///
/// **Thread safety:** value type; not shared. Guarded by its subscription's lock.
internal struct TimeoutStateMachine<Downstream: Subscriber> {
    var delivery: ScheduledDelivery<Downstream>
    private var timer = TimerSlot()
    /// Whether downstream is receiving its subscription.
    private var isHandingOver = false
    /// Whether the timer ran out while downstream was receiving its subscription.
    private var timedOutDuringHandOver = false

    init(downstream: Downstream) {
        delivery = ScheduledDelivery(downstream: downstream, demandMode: .forwarded)
    }

    /// Upstream's subscription arrived: returns the downstream to hand it to, or `nil` to cancel it.
    mutating func subscriptionReceived(_ subscription: any Subscription) -> Downstream? {
        guard let downstream = delivery.subscriptionReceived(subscription) else { return nil }
        isHandingOver = true
        return downstream
    }

    /// Downstream's `receive(subscription:)` returned: returns whether the timer ran out meanwhile,
    /// so that the timeout's completion goes out now.
    mutating func handOverFinished() -> Bool {
        defer {
            isHandingOver = false
            timedOutDuringHandOver = false
        }
        return timedOutDuringHandOver
    }

    /// The subscription reached downstream: returns the generation of the first timer to arm, if still active.
    mutating func timerWanted() -> UInt64? {
        guard delivery.isActive, !timer.isArmed else { return nil }
        return timer.rearm().generation
    }

    /// Queues a value; returns the new timer generation and the previous timer to cancel, or `nil` to ignore it.
    mutating func valueReceived(_ value: Downstream.Input) -> (UInt64, (any Cancellable)?)? {
        guard delivery.isActive else { return nil }
        delivery.enqueue(value)
        let (generation, previous) = timer.rearm()
        return (generation, previous)
    }

    /// Queues the upstream completion; returns whether it was accepted (a delivery must be scheduled)
    /// and the timer to cancel.
    mutating func completionReceived(
        _ completion: Subscribers.Completion<Downstream.Failure>
    ) -> (accepted: Bool, timer: (any Cancellable)?) {
        // After the timer cut upstream, its completion is the timeout's, not upstream's.
        guard delivery.isActive, delivery.enqueueCompletion(completion) else { return (false, nil) }
        return (true, timer.disarm())
    }

    /// The scheduler returned a timer; returns it back if it must be cancelled.
    mutating func timerScheduled(_ cancellable: any Cancellable, generation: UInt64) -> (any Cancellable)? {
        guard delivery.isActive else { return cancellable }
        return timer.scheduled(cancellable, generation: generation)
    }

    /// The timer fired: if it is current, ends the stream; returns the upstream and the timer to
    /// cancel, and whether the completion waits for the hand-over to end.
    mutating func timerFired(
        generation: UInt64
    ) -> (upstream: any Subscription, timer: (any Cancellable)?, duringHandOver: Bool)? {
        guard delivery.isActive else { return nil }
        let (isCurrent, cancellable) = timer.firedOnce(generation: generation)
        guard isCurrent, let upstream = delivery.cutUpstream() else { return nil }
        if isHandingOver { timedOutDuringHandOver = true }
        return (upstream, cancellable, isHandingOver)
    }

    /// Downstream cancelled: returns the upstream subscription and the timer to cancel.
    mutating func cancelled() -> ((any Subscription)?, (any Cancellable)?) {
        (delivery.cancelled(), timer.disarm())
    }
}
