extension Publisher {
    /// Delays delivery of all output to the downstream receiver by a specified amount of time on a
    /// particular scheduler.
    ///
    /// Each value, and the completion (a failure too), reaches downstream `interval` after upstream
    /// sent it, in order and never two at once. Requests (a demand of zero too, as in Combine) and
    /// cancellation go straight upstream. After `cancel()` nothing more reaches downstream, not
    /// even a completion already scheduled (Combine may still deliver it; docs/REACTIVE.md explains
    /// the choice).
    ///
    ///     let scheduler = VirtualTimeScheduler()
    ///     let cancellable = Just(1).delay(for: .seconds(2), scheduler: scheduler).sink { print($0) }
    ///     scheduler.advance(by: .seconds(2))
    ///     // Prints: 1
    ///
    /// - Parameters:
    ///   - interval: The amount of time to delay.
    ///   - tolerance: The allowed tolerance in firing delayed events; the scheduler's minimum by default.
    ///   - scheduler: The scheduler to deliver the delayed events.
    ///   - options: Options relevant to the scheduler's behavior.
    /// - Returns: A publisher that delays delivery of elements and completion to the downstream receiver.
    public func delay<S: Scheduler>(
        for interval: S.SchedulerTimeType.Stride,
        tolerance: S.SchedulerTimeType.Stride? = nil,
        scheduler: S,
        options: S.SchedulerOptions? = nil
    ) -> Publishers.Delay<Self, S> {
        Publishers.Delay(
            upstream: self,
            interval: interval,
            tolerance: tolerance ?? scheduler.minimumTolerance,
            scheduler: scheduler,
            options: options
        )
    }
}

extension Publishers {
    /// A publisher that delays delivery of elements and completion to the downstream receiver.
    ///
    /// **Ownership:** a value; each subscription is retained by its subscriber until completion or
    /// cancel, and by its scheduled deliveries until they have run.
    ///
    /// **Thread safety:** value type; its subscriptions are safe to call from any thread.
    public struct Delay<Upstream: Publisher, Context: Scheduler>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher that this publisher receives elements from.
        public let upstream: Upstream

        /// The amount of time to delay.
        public let interval: Context.SchedulerTimeType.Stride

        /// The allowed tolerance in firing delayed events.
        public let tolerance: Context.SchedulerTimeType.Stride

        /// The scheduler to deliver the delayed events.
        public let scheduler: Context

        /// Options relevant to the scheduler's behavior.
        public let options: Context.SchedulerOptions?

        /// Creates a publisher that delays `upstream`'s events by `interval` on `scheduler`.
        public init(
            upstream: Upstream,
            interval: Context.SchedulerTimeType.Stride,
            tolerance: Context.SchedulerTimeType.Stride,
            scheduler: Context,
            options: Context.SchedulerOptions? = nil
        ) {
            self.upstream = upstream
            self.interval = interval
            self.tolerance = tolerance
            self.scheduler = scheduler
            self.options = options
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let relay = ScheduledRelay<S, Context>(
                name: "Delay",
                downstream: subscriber,
                scheduler: scheduler,
                timing: .after(interval, tolerance: tolerance),
                options: options
            )
            upstream.subscribe(relay)
        }
    }
}
