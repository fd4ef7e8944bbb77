extension Publishers {
    /// A publisher that emits the scheduler's current time every `interval`, driven by any
    /// ``Scheduler`` — so the same chain ticks on a `DispatchQueue` in production and on a
    /// ``VirtualTimeScheduler`` in tests.
    ///
    /// Not in Combine (whose only periodic publisher is Foundation's `Timer.publish`, tied to a
    /// run loop). Each subscriber gets its own schedule, starting when it subscribes: the first
    /// tick comes one interval later. A tick that finds the subscriber without demand, or still
    /// busy with the previous tick, is dropped, as a timer's would be. It never completes; cancel
    /// it to stop the schedule.
    ///
    ///     let scheduler = VirtualTimeScheduler()
    ///     let c = Publishers.Every(interval: .seconds(1), scheduler: scheduler).sink { print($0) }
    ///     scheduler.advance(by: .seconds(2))
    ///     // Prints: 1000000000ns / 2000000000ns (one per line)
    ///
    /// **Ownership:** a value type holding the scheduler; each subscription holds the scheduled
    /// action's cancellable and cancels it when cancelled or deinitialized.
    ///
    /// **Thread safety:** value type; subscribing is safe from any thread, and each subscription
    /// is safe to request from and cancel from any thread.
    public struct Every<Context: Scheduler>: Publisher {
        public typealias Output = Context.SchedulerTimeType
        public typealias Failure = Never

        /// The time between ticks.
        public let interval: Context.SchedulerTimeType.Stride
        /// The allowed timing variance of each tick; `nil` uses the scheduler's minimum tolerance.
        public let tolerance: Context.SchedulerTimeType.Stride?
        /// The scheduler that drives the ticks.
        public let scheduler: Context
        /// Options passed to the scheduler.
        public let options: Context.SchedulerOptions?

        /// Creates a publisher that emits the scheduler's time every `interval`.
        public init(
            interval: Context.SchedulerTimeType.Stride,
            tolerance: Context.SchedulerTimeType.Stride? = nil,
            scheduler: Context,
            options: Context.SchedulerOptions? = nil
        ) {
            self.interval = interval
            self.tolerance = tolerance
            self.scheduler = scheduler
            self.options = options
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Never {
            let inner = Inner(downstream: subscriber, scheduler: scheduler)
            subscriber.receive(subscription: inner)
            inner.start(interval: interval, tolerance: tolerance ?? scheduler.minimumTolerance, options: options)
        }
    }
}

extension Publishers.Every {
    /// One subscriber's schedule of ticks.
    ///
    /// **Ownership:** retained by its subscriber; the scheduled action holds it weakly. Retains the
    /// subscriber until cancelled.
    ///
    /// **Thread safety:** safe to call from any thread.
    private final class Inner<Downstream: Subscriber>: Subscription, CustomStringConvertible, CustomReflectable,
        @unchecked Sendable
    where Downstream.Input == Context.SchedulerTimeType, Downstream.Failure == Never {
        // @unchecked Sendable: `machine` is only touched inside `lock`; `scheduler` is immutable and
        // schedulers are safe to call from any thread.
        private let lock = Lock()
        private var machine: EveryStateMachine<Downstream>  // Guarded by lock.
        private let scheduler: Context

        init(downstream: Downstream, scheduler: Context) {
            machine = EveryStateMachine(downstream: downstream)
            self.scheduler = scheduler
        }

        deinit {
            machine.cancelled()?.cancel()
        }

        var description: String { "Every" }

        var customMirror: Mirror { Mirror(self, children: []) }

        func start(
            interval: Context.SchedulerTimeType.Stride,
            tolerance: Context.SchedulerTimeType.Stride,
            options: Context.SchedulerOptions?
        ) {
            guard lock.withLock({ machine.isActive }) else { return }
            let schedule = scheduler.schedule(
                after: scheduler.now.advanced(by: interval),
                interval: interval,
                tolerance: tolerance,
                options: options
            ) { [weak self] in self?.tick() }
            if let stale = lock.withLock({ machine.scheduled(schedule) }) {
                stale.cancel()
            }
        }

        func request(_ demand: Subscribers.Demand) {
            if demand == .none {
                apiViolation("a subscription's demand must be greater than zero")
            }
            lock.withLock { machine.demanded(demand) }
        }

        func cancel() {
            lock.withLock { machine.cancelled() }?.cancel()
        }

        private func tick() {
            let now = scheduler.now
            guard let downstream = lock.withLock({ machine.ticked() }) else { return }
            let more = downstream.receive(now)
            lock.withLock { machine.delivered(more) }
        }
    }
}

/// The demand and schedule of one ``Publishers/Every`` subscription.
///
/// **Thread safety:** value type; its owner keeps it behind a lock.
private struct EveryStateMachine<Downstream: Subscriber> {
    private enum State {
        /// Between ticks. Next: `.delivering`, `.terminal`.
        case idle(Downstream, demand: Subscribers.Demand)
        /// A tick is being received; `demand` is what is left besides it. Next: `.idle`, `.terminal`.
        case delivering(Downstream, demand: Subscribers.Demand)
        /// Cancelled; subscriber and schedule released. Final.
        case terminal
    }

    private var state: State
    /// The scheduler's cancellable, once the schedule is set up; cancelled on termination.
    private var schedule: (any Cancellable)?

    init(downstream: Downstream) {
        state = .idle(downstream, demand: .none)
    }

    var isActive: Bool {
        if case .terminal = state { return false }
        return true
    }

    /// - Returns: The schedule to cancel at once, if the subscription was cancelled meanwhile.
    mutating func scheduled(_ cancellable: any Cancellable) -> (any Cancellable)? {
        guard isActive else { return cancellable }
        schedule = cancellable
        return nil
    }

    mutating func demanded(_ more: Subscribers.Demand) {
        switch state {
        case .idle(let downstream, let demand):
            state = .idle(downstream, demand: demand + more)
        case .delivering(let downstream, let demand):
            state = .delivering(downstream, demand: demand + more)
        case .terminal:
            break
        }
    }

    /// - Returns: The subscriber to send the tick to, if it has demand and is not busy.
    mutating func ticked() -> Downstream? {
        guard case .idle(let downstream, let demand) = state, demand > 0 else { return nil }
        state = .delivering(downstream, demand: demand - 1)
        return downstream
    }

    mutating func delivered(_ more: Subscribers.Demand) {
        guard case .delivering(let downstream, let demand) = state else { return }
        state = .idle(downstream, demand: demand + more)
    }

    /// - Returns: The schedule to cancel, the first time only.
    mutating func cancelled() -> (any Cancellable)? {
        guard isActive else { return nil }
        state = .terminal
        defer { schedule = nil }
        return schedule
    }
}
