extension Publisher {
    /// Specifies the scheduler on which to receive elements from the publisher.
    ///
    /// Values and the completion are delivered on `scheduler`, in the order upstream sent them and
    /// never two at once, even on a concurrent scheduler. The subscription itself, requests and
    /// cancellation go straight through, on the caller's thread, as in Combine (a demand of zero
    /// too: upstream decides what it means). After `cancel()` nothing more reaches downstream, not
    /// even a completion already scheduled (Combine may still deliver it; docs/REACTIVE.md explains
    /// the choice).
    ///
    ///     let scheduler = VirtualTimeScheduler()
    ///     let cancellable = Just(1).receive(on: scheduler).sink { print($0) }
    ///     scheduler.advance()
    ///     // Prints: 1
    ///
    /// - Parameters:
    ///   - scheduler: The scheduler the publisher uses for element delivery.
    ///   - options: Scheduler options that customize the element delivery.
    /// - Returns: A publisher that delivers elements using the specified scheduler.
    public func receive<S: Scheduler>(
        on scheduler: S,
        options: S.SchedulerOptions? = nil
    ) -> Publishers.ReceiveOn<Self, S> {
        Publishers.ReceiveOn(upstream: self, scheduler: scheduler, options: options)
    }
}

extension Publishers {
    /// A publisher that delivers elements to its downstream subscriber on a specific scheduler.
    ///
    /// **Ownership:** a value; each subscription is retained by its subscriber until completion or cancel.
    ///
    /// **Thread safety:** value type; its subscriptions are safe to call from any thread.
    public struct ReceiveOn<Upstream: Publisher, Context: Scheduler>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// The scheduler the publisher uses to deliver elements.
        public let scheduler: Context

        /// Scheduler options used to customize element delivery.
        public let options: Context.SchedulerOptions?

        /// Creates a publisher that delivers `upstream`'s elements on `scheduler`.
        public init(upstream: Upstream, scheduler: Context, options: Context.SchedulerOptions?) {
            self.upstream = upstream
            self.scheduler = scheduler
            self.options = options
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let relay = ScheduledRelay<S, Context>(
                name: "ReceiveOn",
                downstream: subscriber,
                scheduler: scheduler,
                timing: .immediately,
                options: options
            )
            upstream.subscribe(relay)
        }
    }
}
