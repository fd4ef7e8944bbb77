extension Publisher {
    /// Publishes either the most-recent or first element published by the upstream publisher in the
    /// specified time interval.
    ///
    /// A value that arrives when no window is open is delivered at once (on `scheduler`) and opens a
    /// window of `interval`. Values arriving inside the window are held back: the first of them
    /// (`latest: false`) or the last (`latest: true`) is delivered when the window closes, which opens
    /// the next window. Upstream is asked for an unlimited number of values; a value that comes due
    /// while downstream has no demand is dropped. On completion a held value is delivered first.
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
    /// The subscription of `throttle`: tracks the open window, the held value and the timer that closes
    /// the window; deliveries run on the scheduler, serialized.
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
        typealias Machine = ThrottleStateMachine<Downstream, Context.SchedulerTimeType>

        private let interval: Context.SchedulerTimeType.Stride
        private let scheduler: Context
        private let lock = Lock()
        private var machine: Machine  // Guarded by lock.

        init(publisher: Publishers.Throttle<Upstream, Context>, downstream: Downstream) {
            interval = publisher.interval
            scheduler = publisher.scheduler
            machine = Machine(downstream: downstream, interval: publisher.interval, latest: publisher.latest)
        }

        var description: String { "Throttle" }

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
            let now = scheduler.now
            switch lock.withLock({ machine.valueReceived(input, now: now) }) {
            case .none:
                break
            case .deliverNow:
                scheduler.schedule { self.deliver(self.lock.withLock { self.machine.creditArrived() }) }
            case .armTimer(let generation, let due):
                let cancellable = scheduler.schedule(
                    after: due,
                    interval: interval,
                    tolerance: scheduler.minimumTolerance
                ) { self.timerFired(generation) }
                lock.withLock { machine.timerScheduled(cancellable, generation: generation) }?.cancel()
            }
            return .none
        }

        func receive(completion: Subscribers.Completion<Failure>) {
            let (deliveries, timer) = lock.withLock { machine.completionReceived(completion) }
            timer?.cancel()
            for _ in 0..<deliveries {
                scheduler.schedule { self.deliver(self.lock.withLock { self.machine.creditArrived() }) }
            }
        }

        func request(_ demand: Subscribers.Demand) {
            guard demand > 0 else { apiViolation("Throttle requested a demand of zero") }
            lock.withLock { machine.demandRequested(demand) }
        }

        func cancel() {
            let (upstream, timer) = lock.withLock { machine.cancelled() }
            timer?.cancel()
            upstream?.cancel()
        }

        private func timerFired(_ generation: UInt64) {
            let now = scheduler.now
            let (delivery, timer) = lock.withLock { machine.timerFired(generation: generation, now: now) }
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

/// The state of a `throttle` subscription: its neighbours, downstream demand, the open window, the
/// held value, its timer and the events waiting for delivery.
///
/// **Ownership:** value type, stored in its subscription.
///
/// **Thread safety:** value type; not shared. Guarded by its subscription's lock.
internal struct ThrottleStateMachine<Downstream: Subscriber, Time: Strideable> {
    enum Event {
        case value(Downstream.Input)
        case completion(Subscribers.Completion<Downstream.Failure>)
    }

    /// What the deliverer must hand downstream next.
    enum Delivery {
        case value(Downstream, Downstream.Input)
        case completion(Downstream, Subscribers.Completion<Downstream.Failure>)
    }

    /// What the owner must do about an upstream value.
    enum ValueAction {
        /// Nothing: the value was held or dropped.
        case none
        /// Schedule one delivery at the scheduler's next opportunity.
        case deliverNow
        /// Schedule the timer of `generation` for `due`, when the window closes.
        case armTimer(generation: UInt64, due: Time)
    }

    private enum State {
        /// Waiting for the upstream subscription. Next: `.active`, `.terminal`.
        case awaitingSubscription(Downstream)
        /// Throttling. Next: `.draining`, `.terminal`.
        case active(upstream: any Subscription, downstream: Downstream)
        /// Upstream completed; queued events drain. Next: `.terminal`.
        case draining(Downstream)
        /// The completion was handed downstream, or the subscription was cancelled. Final.
        case terminal
    }

    private let interval: Time.Stride
    private let latest: Bool
    private var state: State
    private var demand = Subscribers.Demand.none
    /// When the current window opened (the last emission); `nil` before the first value.
    private var windowStart: Time?
    /// The value held back until the window closes; only set while the timer is armed.
    private var held: Downstream.Input?
    private var timer = TimerSlot()
    private var queue = SerialDeliveryQueue<Event>()

    init(downstream: Downstream, interval: Time.Stride, latest: Bool) {
        state = .awaitingSubscription(downstream)
        self.interval = interval
        self.latest = latest
    }

    /// Returns the downstream to pass the subscription to, or `nil` if it must be cancelled.
    mutating func subscriptionReceived(_ subscription: any Subscription) -> Downstream? {
        guard case .awaitingSubscription(let downstream) = state else { return nil }
        state = .active(upstream: subscription, downstream: downstream)
        return downstream
    }

    mutating func valueReceived(_ value: Downstream.Input, now: Time) -> ValueAction {
        guard case .active = state else { return .none }
        if !timer.isArmed, windowStart.map({ $0.distance(to: now) >= interval }) ?? true {
            // No window is open: this value opens one and goes out at once.
            windowStart = now
            return enqueueIfDemanded(value) ? .deliverNow : .none
        }
        if held == nil || latest { held = value }
        guard !timer.isArmed, let windowStart else { return .none }
        return .armTimer(generation: timer.rearm().generation, due: windowStart.advanced(by: interval))
    }

    /// The scheduler returned a timer; returns it back if it must be cancelled.
    mutating func timerScheduled(_ cancellable: any Cancellable, generation: UInt64) -> (any Cancellable)? {
        guard case .active = state else { return cancellable }
        return timer.scheduled(cancellable, generation: generation)
    }

    /// The window closed: the held value goes out and opens the next window. Returns what to deliver
    /// and the timer to cancel.
    mutating func timerFired(generation: UInt64, now: Time) -> (Delivery?, (any Cancellable)?) {
        guard case .active = state else { return (nil, nil) }
        let (isCurrent, cancellable) = timer.firedOnce(generation: generation)
        guard isCurrent, let value = held else { return (nil, cancellable) }
        held = nil
        windowStart = now
        guard enqueueIfDemanded(value) else { return (nil, cancellable) }
        return (creditArrived(), cancellable)
    }

    /// Queues the held value (if any) and the completion; returns how many deliveries to schedule
    /// and the timer to cancel.
    mutating func completionReceived(
        _ completion: Subscribers.Completion<Downstream.Failure>
    ) -> (deliveries: Int, timer: (any Cancellable)?) {
        guard case .active(_, let downstream) = state else { return (0, nil) }
        state = .draining(downstream)
        var deliveries = 1
        if let value = held, enqueueIfDemanded(value) { deliveries += 1 }
        held = nil
        queue.enqueue(.completion(completion))
        return (deliveries, timer.disarm())
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
        held = nil
        queue.removeAll()
        return (upstream, timer.disarm())
    }

    /// Queues a value if downstream has demand for it, taking one from the demand; drops it otherwise.
    private mutating func enqueueIfDemanded(_ value: Downstream.Input) -> Bool {
        guard demand > 0 else { return false }
        demand -= 1
        queue.enqueue(.value(value))
        return true
    }

    private mutating func delivery(for event: Event) -> Delivery {
        let downstream: Downstream
        switch state {
        case .active(_, let current), .draining(let current):
            downstream = current
        case .awaitingSubscription, .terminal:
            internalInconsistency("throttle event \(event) delivered in \(state)")
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
