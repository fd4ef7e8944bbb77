extension Publisher {
    /// Publishes elements only after a specified time interval elapses between events.
    ///
    /// Every value restarts a timer of `dueTime`; when the timer runs out, the latest value is
    /// delivered on `scheduler` (or dropped, if downstream has no demand then). Upstream is asked
    /// for an unlimited number of values. When upstream completes, a value still waiting for quiet
    /// is dropped and the completion is delivered on `scheduler`, as in Combine (scheduled without
    /// `options`, which Combine passes only to the timers). After `cancel()` nothing more reaches
    /// downstream, not even a completion already scheduled (Combine may still deliver it;
    /// docs/REACTIVE.md explains the choice).
    ///
    ///     let scheduler = VirtualTimeScheduler(), subject = PassthroughSubject<String, Never>()
    ///     let c = subject.debounce(for: .seconds(1), scheduler: scheduler).sink { print($0) }
    ///     ["S", "Sw", "Swi", "Swift"].forEach(subject.send); scheduler.advance(by: .seconds(1))
    ///     // Prints: Swift
    ///
    /// - Parameters:
    ///   - dueTime: The time the publisher should wait before publishing an element.
    ///   - scheduler: The scheduler on which this publisher delivers elements.
    ///   - options: Scheduler options that customize this publisher's delivery of elements.
    /// - Returns: A publisher that publishes events only after a specified time elapses.
    public func debounce<S: Scheduler>(
        for dueTime: S.SchedulerTimeType.Stride,
        scheduler: S,
        options: S.SchedulerOptions? = nil
    ) -> Publishers.Debounce<Self, S> {
        Publishers.Debounce(upstream: self, dueTime: dueTime, scheduler: scheduler, options: options)
    }
}

extension Publishers {
    /// A publisher that publishes elements only after a specified time interval elapses between events.
    ///
    /// **Ownership:** a value; each subscription is retained by its subscriber until completion or
    /// cancel, and by its scheduled deliveries and timer until they have run or been cancelled.
    ///
    /// **Thread safety:** value type; its subscriptions are safe to call from any thread.
    public struct Debounce<Upstream: Publisher, Context: Scheduler>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// The amount of time the publisher should wait before publishing an element.
        public let dueTime: Context.SchedulerTimeType.Stride

        /// The scheduler on which this publisher delivers elements.
        public let scheduler: Context

        /// Scheduler options that customize this publisher's delivery of elements.
        public let options: Context.SchedulerOptions?

        /// Creates a publisher that publishes `upstream`'s latest value after `dueTime` of quiet.
        public init(
            upstream: Upstream,
            dueTime: Context.SchedulerTimeType.Stride,
            scheduler: Context,
            options: Context.SchedulerOptions?
        ) {
            self.upstream = upstream
            self.dueTime = dueTime
            self.scheduler = scheduler
            self.options = options
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.subscribe(Inner(publisher: self, downstream: subscriber))
        }
    }
}

extension Publishers.Debounce {
    /// The subscription of `debounce`: keeps the latest value and a cancellable timer re-armed by every
    /// value; deliveries run on the scheduler, serialized.
    ///
    /// **Ownership:** retained by the upstream publisher, the downstream subscriber, its scheduled
    /// deliveries and its timer; it drops its neighbours and cancels its timer on completion or cancel.
    ///
    /// **Thread safety:** safe to call from any thread.
    private final class Inner<Downstream: Subscriber>: Subscriber, Subscription, ScheduledDeliverer,
        CustomStringConvertible, CustomReflectable, @unchecked Sendable
    where Downstream.Input == Output, Downstream.Failure == Failure {
        // @unchecked Sendable: `machine` is only touched inside `lock`; everything else is immutable.
        typealias Input = Upstream.Output
        typealias Failure = Upstream.Failure
        typealias Machine = DebounceStateMachine<Downstream>

        private let dueTime: Context.SchedulerTimeType.Stride
        private let scheduler: Context
        private let options: Context.SchedulerOptions?
        private let lock = Lock()
        private var machine: Machine  // Guarded by lock.

        init(publisher: Publishers.Debounce<Upstream, Context>, downstream: Downstream) {
            dueTime = publisher.dueTime
            scheduler = publisher.scheduler
            options = publisher.options
            machine = Machine(downstream: downstream)
        }

        var description: String { "Debounce" }

        var customMirror: Mirror { Mirror(self, children: []) }

        func withDelivery<Result>(_ body: (inout ScheduledDelivery<Downstream>) -> Result) -> Result {
            lock.withLock { body(&machine.delivery) }
        }

        func receive(subscription: any Subscription) {
            acceptSubscription(subscription)
        }

        func receive(_ input: Input) -> Subscribers.Demand {
            guard let (generation, previous) = lock.withLock({ machine.valueReceived(input) }) else { return .none }
            previous?.cancel()
            let cancellable = scheduler.scheduleSlotTimer(after: dueTime, options: options) {
                self.timerFired(generation)
            }
            lock.withLock { machine.timerScheduled(cancellable, generation: generation) }?.cancel()
            return .none
        }

        func receive(completion: Subscribers.Completion<Failure>) {
            let (accepted, timer) = lock.withLock { machine.completionReceived(completion) }
            guard accepted else { return }
            timer?.cancel()
            // Without the options, as Combine schedules it.
            scheduler.schedule(options: nil) { self.creditArrived() }
        }

        func request(_ demand: Subscribers.Demand) {
            demandArrived(demand)
        }

        func cancel() {
            let (upstream, timer) = lock.withLock { machine.cancelled() }
            timer?.cancel()
            upstream?.cancel()
        }

        private func timerFired(_ generation: UInt64) {
            let (delivery, timer) = lock.withLock { machine.timerFired(generation: generation) }
            timer?.cancel()
            deliver(delivery)
        }
    }
}

/// The state of a `debounce` subscription: the latest value waiting for quiet, its timer, and the
/// ``ScheduledDelivery`` core (neighbours, demand, queued events).
///
/// **Ownership:** value type, stored in its subscription.
///
/// **Thread safety:** value type; not shared. Guarded by its subscription's lock.
internal struct DebounceStateMachine<Downstream: Subscriber> {
    var delivery: ScheduledDelivery<Downstream>
    /// The latest value, waiting for the timer; only set while upstream runs.
    private var latest: Downstream.Input?
    private var timer = TimerSlot()

    init(downstream: Downstream) {
        delivery = ScheduledDelivery(downstream: downstream, demandMode: .counted)
    }

    /// Keeps the value and restarts the timer: returns its new generation and the previous timer to cancel.
    mutating func valueReceived(_ value: Downstream.Input) -> (UInt64, (any Cancellable)?)? {
        guard delivery.isActive else { return nil }
        latest = value
        let (generation, previous) = timer.rearm()
        return (generation, previous)
    }

    /// The scheduler returned a timer; returns it back if it must be cancelled.
    mutating func timerScheduled(_ cancellable: any Cancellable, generation: UInt64) -> (any Cancellable)? {
        guard delivery.isActive else { return cancellable }
        return timer.scheduled(cancellable, generation: generation)
    }

    /// The timer fired: returns what to deliver (the latest value, if there is demand) and the timer to cancel.
    mutating func timerFired(generation: UInt64) -> (ScheduledDelivery<Downstream>.Delivery?, (any Cancellable)?) {
        guard delivery.isActive else { return (nil, nil) }
        let (isCurrent, cancellable) = timer.firedOnce(generation: generation)
        guard isCurrent, let value = latest.take() else { return (nil, cancellable) }
        // Like Combine, a value that comes due while downstream has no demand is dropped.
        guard delivery.takeDemand() else { return (nil, cancellable) }
        delivery.enqueue(value)
        return (delivery.creditArrived(), cancellable)
    }

    /// Drops the waiting value and queues the completion; returns whether a delivery must be
    /// scheduled, and the timer to cancel.
    mutating func completionReceived(
        _ completion: Subscribers.Completion<Downstream.Failure>
    ) -> (accepted: Bool, timer: (any Cancellable)?) {
        guard delivery.enqueueCompletion(completion) else { return (false, nil) }
        latest = nil
        return (true, timer.disarm())
    }

    /// Downstream cancelled: returns the upstream subscription and the timer to cancel.
    mutating func cancelled() -> ((any Subscription)?, (any Cancellable)?) {
        latest = nil
        return (delivery.cancelled(), timer.disarm())
    }
}
