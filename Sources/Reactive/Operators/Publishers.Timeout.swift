extension Publisher {
    /// Terminates publishing if the upstream publisher exceeds the specified time interval without
    /// producing an element.
    ///
    /// The timer starts at subscription and restarts with every value. When it runs out, the
    /// subscription to upstream is cancelled and the publisher fails with `customError()`, or
    /// finishes normally if there is no `customError`. Values and the completion are delivered on
    /// `scheduler`, in order; requests go straight upstream.
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
    private final class Inner<Downstream: Subscriber>: Subscriber, Subscription, CustomStringConvertible,
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

        func receive(subscription: any Subscription) {
            guard let downstream = lock.withLock({ machine.subscriptionReceived(subscription) }) else {
                subscription.cancel()
                return
            }
            downstream.receive(subscription: self)
            if let generation = lock.withLock({ machine.timerWanted() }) {
                armTimer(generation)
            }
        }

        func receive(_ input: Input) -> Subscribers.Demand {
            guard let (generation, previous) = lock.withLock({ machine.valueReceived(input) }) else { return .none }
            previous?.cancel()
            scheduler.schedule(options: options) { self.deliver() }
            armTimer(generation)
            return .none
        }

        func receive(completion: Subscribers.Completion<Failure>) {
            let (accepted, timer) = lock.withLock { machine.completionReceived(completion) }
            guard accepted else { return }
            timer?.cancel()
            scheduler.schedule(options: options) { self.deliver() }
        }

        func request(_ demand: Subscribers.Demand) {
            // A demand of zero asks for nothing; Combine does not trap on it.
            guard demand > 0 else { return }
            lock.withLock { machine.upstream }?.request(demand)
        }

        func cancel() {
            let (upstream, timer) = lock.withLock { machine.cancelled() }
            timer?.cancel()
            upstream?.cancel()
        }

        private func armTimer(_ generation: UInt64) {
            let cancellable = scheduler.schedule(
                after: scheduler.now.advanced(by: interval),
                interval: interval,
                tolerance: scheduler.minimumTolerance,
                options: options
            ) { self.timerFired(generation) }
            lock.withLock { machine.timerScheduled(cancellable, generation: generation) }?.cancel()
        }

        private func timerFired(_ generation: UInt64) {
            guard let (upstream, timer) = lock.withLock({ machine.timerFired(generation: generation) }) else { return }
            timer?.cancel()
            upstream.cancel()
            let completion: Subscribers.Completion<Failure> = customError.map { .failure($0()) } ?? .finished
            // This action is on the scheduler already, so it delivers the completion itself.
            deliver(lock.withLock { machine.timeoutCompletionCreated(completion) })
        }

        /// Runs on the scheduler, once per relayed event.
        private func deliver() {
            deliver(lock.withLock { machine.creditArrived() })
        }

        private func deliver(_ first: Machine.Delivery?) {
            var next = first
            while let delivery = next {
                switch delivery {
                case .value(let downstream, let value, let upstream):
                    let demand = downstream.receive(value)
                    if demand > 0 { upstream?.request(demand) }
                case .completion(let downstream, let completion):
                    downstream.receive(completion: completion)
                }
                next = lock.withLock { machine.deliveryFinished() }
            }
        }
    }
}

/// The state of a `timeout` subscription: its neighbours, its timer and the events waiting for delivery.
///
/// **Ownership:** value type, stored in its subscription.
///
/// **Thread safety:** value type; not shared. Guarded by its subscription's lock.
internal struct TimeoutStateMachine<Downstream: Subscriber> {
    enum Event {
        case value(Downstream.Input)
        case completion(Subscribers.Completion<Downstream.Failure>)
    }

    /// What the deliverer must hand downstream next (with the upstream to forward returned demand to).
    enum Delivery {
        case value(Downstream, Downstream.Input, (any Subscription)?)
        case completion(Downstream, Subscribers.Completion<Downstream.Failure>)
    }

    private enum State {
        /// Waiting for the upstream subscription. Next: `.active`, `.terminal`.
        case awaitingSubscription(Downstream)
        /// Relaying with the timer armed. Next: `.draining`, `.terminal`.
        case active(upstream: any Subscription, downstream: Downstream)
        /// Upstream completed, or timed out and was cancelled; queued events drain. Next: `.terminal`.
        case draining(Downstream)
        /// The completion was handed downstream, or the subscription was cancelled. Final.
        case terminal
    }

    private var state: State
    private var timer = TimerSlot()
    private var queue = SerialDeliveryQueue<Event>()

    init(downstream: Downstream) {
        state = .awaitingSubscription(downstream)
    }

    /// The upstream subscription, while upstream is running.
    var upstream: (any Subscription)? {
        if case .active(let upstream, _) = state { return upstream }
        return nil
    }

    /// Returns the downstream to pass the subscription to, or `nil` if it must be cancelled.
    mutating func subscriptionReceived(_ subscription: any Subscription) -> Downstream? {
        guard case .awaitingSubscription(let downstream) = state else { return nil }
        state = .active(upstream: subscription, downstream: downstream)
        return downstream
    }

    /// The subscription reached downstream: returns the generation of the first timer to arm, if still active.
    mutating func timerWanted() -> UInt64? {
        guard case .active = state, !timer.isArmed else { return nil }
        return timer.rearm().generation
    }

    /// Queues a value; returns the new timer generation and the previous timer to cancel, or `nil` to ignore it.
    mutating func valueReceived(_ value: Downstream.Input) -> (UInt64, (any Cancellable)?)? {
        guard case .active = state else { return nil }
        queue.enqueue(.value(value))
        let (generation, previous) = timer.rearm()
        return (generation, previous)
    }

    /// Queues the upstream completion; returns whether it was accepted (a delivery must be scheduled)
    /// and the timer to cancel.
    mutating func completionReceived(
        _ completion: Subscribers.Completion<Downstream.Failure>
    ) -> (accepted: Bool, timer: (any Cancellable)?) {
        guard case .active(_, let downstream) = state else { return (false, nil) }
        state = .draining(downstream)
        queue.enqueue(.completion(completion))
        return (true, timer.disarm())
    }

    /// The scheduler returned a timer; returns it back if it must be cancelled.
    mutating func timerScheduled(_ cancellable: any Cancellable, generation: UInt64) -> (any Cancellable)? {
        guard case .active = state else { return cancellable }
        return timer.scheduled(cancellable, generation: generation)
    }

    /// The timer fired: if it is current, returns the upstream and the timer to cancel.
    mutating func timerFired(generation: UInt64) -> (any Subscription, (any Cancellable)?)? {
        guard case .active(let upstream, let downstream) = state else { return nil }
        let (isCurrent, cancellable) = timer.firedOnce(generation: generation)
        guard isCurrent else { return nil }
        state = .draining(downstream)
        return (upstream, cancellable)
    }

    /// Queues the timeout's completion and credits it (the timer's action delivers it); returns what to deliver.
    mutating func timeoutCompletionCreated(_ completion: Subscribers.Completion<Downstream.Failure>) -> Delivery? {
        guard case .draining = state else { return nil }
        queue.enqueue(.completion(completion))
        return creditArrived()
    }

    /// A scheduled delivery ran: returns what the caller must deliver, if anything.
    mutating func creditArrived() -> Delivery? {
        guard let event = queue.creditArrived() else { return nil }
        return delivery(for: event)
    }

    /// The caller delivered; returns what it must deliver next, if anything.
    mutating func deliveryFinished() -> Delivery? {
        guard let event = queue.deliveryFinished() else { return nil }
        return delivery(for: event)
    }

    /// Downstream cancelled: returns the upstream subscription and the timer to cancel.
    mutating func cancelled() -> ((any Subscription)?, (any Cancellable)?) {
        let upstream = self.upstream
        state = .terminal
        queue.removeAll()
        return (upstream, timer.disarm())
    }

    private mutating func delivery(for event: Event) -> Delivery {
        let downstream: Downstream
        switch state {
        case .active(_, let current), .draining(let current):
            downstream = current
        case .awaitingSubscription, .terminal:
            internalInconsistency("timeout event \(event) delivered in \(state)")
        }
        switch event {
        case .value(let value):
            return .value(downstream, value, upstream)
        case .completion(let completion):
            state = .terminal
            queue.removeAll()
            return .completion(downstream, completion)
        }
    }
}
