extension Publisher {
    /// Specifies the scheduler on which to perform subscribe, cancel, and request operations.
    ///
    /// Unlike ``Publisher/receive(on:options:)``, which affects downstream messages, this changes
    /// the context of upstream operations: subscribing, requesting and cancelling happen on
    /// `scheduler`. Values and the completion arrive on whatever context upstream sends them.
    /// Requests are passed on as they are, a demand of zero too, as in Combine. After `cancel()`
    /// nothing more reaches downstream, not even what upstream sends before the cancel scheduled
    /// for it has run (docs/REACTIVE.md).
    ///
    ///     let scheduler = VirtualTimeScheduler()
    ///     let cancellable = [1, 2].publisher.subscribe(on: scheduler).sink { print($0) }
    ///     scheduler.advance()
    ///     // Prints: 1 2 (one per line)
    ///
    /// - Parameters:
    ///   - scheduler: The scheduler used to send messages to upstream publishers.
    ///   - options: Options that customize the delivery of elements.
    /// - Returns: A publisher which performs upstream operations on the specified scheduler.
    public func subscribe<S: Scheduler>(
        on scheduler: S,
        options: S.SchedulerOptions? = nil
    ) -> Publishers.SubscribeOn<Self, S> {
        Publishers.SubscribeOn(upstream: self, scheduler: scheduler, options: options)
    }
}

extension Publishers {
    /// A publisher that receives elements from an upstream publisher on a specific scheduler.
    ///
    /// **Ownership:** a value; each subscription is retained by its subscriber until completion or
    /// cancel, and by its scheduled upstream operations until they have run.
    ///
    /// **Thread safety:** value type; its subscriptions are safe to call from any thread.
    public struct SubscribeOn<Upstream: Publisher, Context: Scheduler>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// The scheduler the publisher should use to receive elements.
        public let scheduler: Context

        /// Scheduler options that customize the delivery of elements.
        public let options: Context.SchedulerOptions?

        /// Creates a publisher that subscribes to `upstream`, requests from it and cancels it on `scheduler`.
        public init(upstream: Upstream, scheduler: Context, options: Context.SchedulerOptions?) {
            self.upstream = upstream
            self.scheduler = scheduler
            self.options = options
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let inner = Inner(downstream: subscriber, scheduler: scheduler, options: options)
            let upstream = self.upstream
            scheduler.schedule(options: options) { upstream.subscribe(inner) }
        }
    }
}

extension Publishers.SubscribeOn {
    /// The subscription of `subscribe(on:)`: passes values and the completion straight through and
    /// hops requests and cancellation onto the scheduler.
    ///
    /// **Ownership:** retained by the upstream publisher and the downstream subscriber; drops both on
    /// completion or cancel.
    ///
    /// **Thread safety:** safe to call from any thread.
    private final class Inner<Downstream: Subscriber>: Subscriber, Subscription, CustomStringConvertible,
        CustomReflectable, @unchecked Sendable
    where Downstream.Input == Output, Downstream.Failure == Failure {
        // @unchecked Sendable: `machine` is only touched inside `lock`; everything else is immutable.
        typealias Input = Upstream.Output
        typealias Failure = Upstream.Failure

        private let scheduler: Context
        private let options: Context.SchedulerOptions?
        private let lock = Lock()
        private var machine: ForwardingStateMachine<Downstream>  // Guarded by lock.

        init(downstream: Downstream, scheduler: Context, options: Context.SchedulerOptions?) {
            self.scheduler = scheduler
            self.options = options
            machine = ForwardingStateMachine(downstream: downstream)
        }

        var description: String { "SubscribeOn" }

        var customMirror: Mirror { Mirror(self, children: []) }

        func receive(subscription: any Subscription) {
            guard let downstream = lock.withLock({ machine.subscriptionReceived(subscription) }) else {
                subscription.cancel()
                return
            }
            downstream.receive(subscription: self)
        }

        func receive(_ input: Input) -> Subscribers.Demand {
            lock.withLock { machine.downstreamForValue() }?.receive(input) ?? .none
        }

        func receive(completion: Subscribers.Completion<Failure>) {
            lock.withLock { machine.upstreamCompleted() }?.receive(completion: completion)
        }

        func request(_ demand: Subscribers.Demand) {
            // Passed on as it is, a demand of zero too, as Combine passes it: upstream decides what it means.
            guard let upstream = lock.withLock({ machine.upstreamForDemand() }) else { return }
            scheduler.schedule(options: options) { upstream.request(demand) }
        }

        func cancel() {
            guard let upstream = lock.withLock({ machine.cancelled() }) else { return }
            scheduler.schedule(options: options) { upstream.cancel() }
        }
    }
}
