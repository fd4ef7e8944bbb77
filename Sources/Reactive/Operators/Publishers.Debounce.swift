extension Publisher {
    /// Publishes elements only after a specified time interval elapses between events.
    ///
    /// Every value restarts a timer of `dueTime`; when the timer runs out, the latest value is
    /// delivered on `scheduler` (or dropped, if downstream has no demand then). Upstream is asked
    /// for an unlimited number of values. When upstream completes, a value still waiting for quiet
    /// is dropped and the completion is delivered on `scheduler`, as in Combine.
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
    private final class Inner<Downstream: Subscriber>: Subscriber, Subscription, CustomStringConvertible,
        CustomReflectable, @unchecked Sendable
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

        func receive(subscription: any Subscription) {
            guard let downstream = lock.withLock({ machine.subscriptionReceived(subscription) }) else {
                subscription.cancel()
                return
            }
            downstream.receive(subscription: self)
            subscription.request(.unlimited)
        }

        func receive(_ input: Input) -> Subscribers.Demand {
            guard let (generation, previous) = lock.withLock({ machine.valueReceived(input) }) else { return .none }
            previous?.cancel()
            let cancellable = scheduler.schedule(
                after: scheduler.now.advanced(by: dueTime),
                interval: dueTime,
                tolerance: scheduler.minimumTolerance,
                options: options
            ) { self.timerFired(generation) }
            lock.withLock { machine.timerScheduled(cancellable, generation: generation) }?.cancel()
            return .none
        }

        func receive(completion: Subscribers.Completion<Failure>) {
            let (accepted, timer) = lock.withLock { machine.completionReceived(completion) }
            guard accepted else { return }
            timer?.cancel()
            scheduler.schedule(options: options) { self.deliver(self.lock.withLock { self.machine.creditArrived() }) }
        }

        func request(_ demand: Subscribers.Demand) {
            guard demand > 0 else { apiViolation("Debounce requested a demand of zero") }
            lock.withLock { machine.demandRequested(demand) }
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

        private func deliver(_ first: Machine.Delivery?) {
            var next = first
            while let delivery = next {
                var demand = Subscribers.Demand.none
                switch delivery {
                case .value(let downstream, let value):
                    demand = downstream.receive(value)
                case .completion(let downstream, let completion):
                    downstream.receive(completion: completion)
                }
                next = lock.withLock { machine.deliveryFinished(additionalDemand: demand) }
            }
        }
    }
}

/// The state of a `debounce` subscription: its neighbours, downstream demand, the latest value waiting
/// for quiet, its timer and the events waiting for delivery.
///
/// **Ownership:** value type, stored in its subscription.
///
/// **Thread safety:** value type; not shared. Guarded by its subscription's lock.
internal struct DebounceStateMachine<Downstream: Subscriber> {
    enum Event {
        case value(Downstream.Input)
        case completion(Subscribers.Completion<Downstream.Failure>)
    }

    /// What the deliverer must hand downstream next.
    enum Delivery {
        case value(Downstream, Downstream.Input)
        case completion(Downstream, Subscribers.Completion<Downstream.Failure>)
    }

    private enum State {
        /// Waiting for the upstream subscription. Next: `.active`, `.terminal`.
        case awaitingSubscription(Downstream)
        /// Debouncing. Next: `.draining`, `.terminal`.
        case active(upstream: any Subscription, downstream: Downstream)
        /// Upstream completed; queued events drain. Next: `.terminal`.
        case draining(Downstream)
        /// The completion was handed downstream, or the subscription was cancelled. Final.
        case terminal
    }

    private var state: State
    private var demand = Subscribers.Demand.none
    /// The latest value, waiting for the timer; only set while `.active`.
    private var latest: Downstream.Input?
    private var timer = TimerSlot()
    private var queue = SerialDeliveryQueue<Event>()

    init(downstream: Downstream) {
        state = .awaitingSubscription(downstream)
    }

    /// Returns the downstream to pass the subscription to, or `nil` if it must be cancelled.
    mutating func subscriptionReceived(_ subscription: any Subscription) -> Downstream? {
        guard case .awaitingSubscription(let downstream) = state else { return nil }
        state = .active(upstream: subscription, downstream: downstream)
        return downstream
    }

    /// Keeps the value and restarts the timer: returns its new generation and the previous timer to cancel.
    mutating func valueReceived(_ value: Downstream.Input) -> (UInt64, (any Cancellable)?)? {
        guard case .active = state else { return nil }
        latest = value
        let (generation, previous) = timer.rearm()
        return (generation, previous)
    }

    /// The scheduler returned a timer; returns it back if it must be cancelled.
    mutating func timerScheduled(_ cancellable: any Cancellable, generation: UInt64) -> (any Cancellable)? {
        guard case .active = state else { return cancellable }
        return timer.scheduled(cancellable, generation: generation)
    }

    /// The timer fired: returns what to deliver (the latest value, if there is demand) and the timer to cancel.
    mutating func timerFired(generation: UInt64) -> (Delivery?, (any Cancellable)?) {
        guard case .active = state else { return (nil, nil) }
        let (isCurrent, cancellable) = timer.firedOnce(generation: generation)
        guard isCurrent, let value = latest else { return (nil, cancellable) }
        latest = nil
        // Like Combine, a value that comes due while downstream has no demand is dropped.
        guard demand > 0 else { return (nil, cancellable) }
        demand -= 1
        queue.enqueue(.value(value))
        return (creditArrived(), cancellable)
    }

    /// Drops the waiting value and queues the completion; returns whether a delivery must be
    /// scheduled, and the timer to cancel.
    mutating func completionReceived(
        _ completion: Subscribers.Completion<Downstream.Failure>
    ) -> (accepted: Bool, timer: (any Cancellable)?) {
        guard case .active(_, let downstream) = state else { return (false, nil) }
        state = .draining(downstream)
        latest = nil
        queue.enqueue(.completion(completion))
        return (true, timer.disarm())
    }

    mutating func demandRequested(_ additional: Subscribers.Demand) {
        switch state {
        case .active, .draining: demand += additional
        case .awaitingSubscription, .terminal: break
        }
    }

    /// A scheduled delivery ran: returns what the caller must deliver, if anything.
    mutating func creditArrived() -> Delivery? {
        guard let event = queue.creditArrived() else { return nil }
        return delivery(for: event)
    }

    /// The caller delivered; adds the demand downstream returned and returns what to deliver next.
    mutating func deliveryFinished(additionalDemand: Subscribers.Demand) -> Delivery? {
        if additionalDemand > 0 { demandRequested(additionalDemand) }
        guard let event = queue.deliveryFinished() else { return nil }
        return delivery(for: event)
    }

    /// Downstream cancelled: returns the upstream subscription and the timer to cancel.
    mutating func cancelled() -> ((any Subscription)?, (any Cancellable)?) {
        var upstream: (any Subscription)?
        if case .active(let current, _) = state { upstream = current }
        state = .terminal
        latest = nil
        queue.removeAll()
        return (upstream, timer.disarm())
    }

    private mutating func delivery(for event: Event) -> Delivery {
        let downstream: Downstream
        switch state {
        case .active(_, let current), .draining(let current):
            downstream = current
        case .awaitingSubscription, .terminal:
            internalInconsistency("debounce event \(event) delivered in \(state)")
        }
        switch event {
        case .value(let value):
            return .value(downstream, value)
        case .completion(let completion):
            state = .terminal
            queue.removeAll()
            return .completion(downstream, completion)
        }
    }
}
