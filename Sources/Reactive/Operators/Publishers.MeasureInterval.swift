extension Publisher {
    /// Measures and emits the time interval between events received from an upstream publisher.
    ///
    /// The first interval is measured from the moment of subscription. Values and the completion
    /// are delivered on the thread upstream sends them on; `scheduler` only provides the clock.
    ///
    ///     let scheduler = VirtualTimeScheduler(), subject = PassthroughSubject<Int, Never>()
    ///     let c = subject.measureInterval(using: scheduler).sink { print($0) }
    ///     scheduler.advance(by: .seconds(2)); subject.send(1)
    ///     // Prints: 2000000000ns
    ///
    /// - Parameters:
    ///   - scheduler: A scheduler to use for tracking the timing of events.
    ///   - options: Options that customize the delivery of elements.
    /// - Returns: A publisher that emits elements representing the time interval between the elements it receives.
    public func measureInterval<S: Scheduler>(
        using scheduler: S,
        options: S.SchedulerOptions? = nil
    ) -> Publishers.MeasureInterval<Self, S> {
        Publishers.MeasureInterval(upstream: self, scheduler: scheduler)
    }
}

extension Publishers {
    /// A publisher that measures and emits the time interval between events received from an upstream publisher.
    ///
    /// **Ownership:** a value; each subscription is retained by its subscriber until completion or cancel.
    ///
    /// **Thread safety:** value type; its subscriptions are safe to call from any thread.
    public struct MeasureInterval<Upstream: Publisher, Context: Scheduler>: Publisher {
        public typealias Output = Context.SchedulerTimeType.Stride
        public typealias Failure = Upstream.Failure

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// The scheduler used for tracking the timing of events.
        public let scheduler: Context

        /// Creates a publisher that measures the intervals between `upstream`'s events on `scheduler`'s clock.
        public init(upstream: Upstream, scheduler: Context) {
            self.upstream = upstream
            self.scheduler = scheduler
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.subscribe(Inner(downstream: subscriber, scheduler: scheduler))
        }
    }
}

extension Publishers.MeasureInterval {
    /// The subscription of `measureInterval`: remembers when the last event arrived and passes the
    /// intervals straight through.
    ///
    /// **Ownership:** retained by the upstream publisher and the downstream subscriber; drops both on
    /// completion or cancel.
    ///
    /// **Thread safety:** safe to call from any thread.
    private final class Inner<Downstream: Subscriber>: Subscriber, Subscription, CustomStringConvertible,
        CustomReflectable, @unchecked Sendable
    where Downstream.Input == Output, Downstream.Failure == Failure {
        // @unchecked Sendable: `state` is only touched inside `lock`; `scheduler` is immutable.
        typealias Input = Upstream.Output
        typealias Failure = Upstream.Failure

        private enum State {
            /// Waiting for the upstream subscription. Next: `.active`, `.terminal`.
            case awaitingSubscription(Downstream)
            /// Measuring from `last`. Next: `.terminal`.
            case active(upstream: any Subscription, downstream: Downstream, last: Context.SchedulerTimeType)
            /// Completed or cancelled. Final.
            case terminal
        }

        private let scheduler: Context
        private let lock = Lock()
        private var state: State  // Guarded by lock.

        init(downstream: Downstream, scheduler: Context) {
            self.scheduler = scheduler
            state = .awaitingSubscription(downstream)
        }

        var description: String { "MeasureInterval" }

        var customMirror: Mirror { Mirror(self, children: []) }

        func receive(subscription: any Subscription) {
            let now = scheduler.now
            let downstream = lock.withLock { () -> Downstream? in
                guard case .awaitingSubscription(let downstream) = state else { return nil }
                state = .active(upstream: subscription, downstream: downstream, last: now)
                return downstream
            }
            if let downstream {
                downstream.receive(subscription: self)
            } else {
                subscription.cancel()
            }
        }

        func receive(_ input: Input) -> Subscribers.Demand {
            let now = scheduler.now
            let measured = lock.withLock { () -> (Downstream, Context.SchedulerTimeType.Stride)? in
                guard case .active(let upstream, let downstream, let last) = state else { return nil }
                state = .active(upstream: upstream, downstream: downstream, last: now)
                return (downstream, last.distance(to: now))
            }
            guard let (downstream, stride) = measured else { return .none }
            return downstream.receive(stride)
        }

        func receive(completion: Subscribers.Completion<Failure>) {
            let downstream = lock.withLock { () -> Downstream? in
                guard case .active(_, let downstream, _) = state else { return nil }
                state = .terminal
                return downstream
            }
            downstream?.receive(completion: completion)
        }

        func request(_ demand: Subscribers.Demand) {
            guard demand > 0 else { apiViolation("MeasureInterval requested a demand of zero") }
            let upstream = lock.withLock { () -> (any Subscription)? in
                guard case .active(let upstream, _, _) = state else { return nil }
                return upstream
            }
            upstream?.request(demand)
        }

        func cancel() {
            let upstream = lock.withLock { () -> (any Subscription)? in
                defer { state = .terminal }
                guard case .active(let upstream, _, _) = state else { return nil }
                return upstream
            }
            upstream?.cancel()
        }
    }
}
