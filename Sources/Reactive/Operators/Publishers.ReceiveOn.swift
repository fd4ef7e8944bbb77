extension Publisher {
    /// Specifies the scheduler on which to receive elements from the publisher.
    ///
    /// Values and the completion are delivered on `scheduler`, in the order upstream sent them and
    /// never two at once, even on a concurrent scheduler. The subscription itself, requests and
    /// cancellation go straight through, on the caller's thread, as in Combine.
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

/// The subscription of `receive(on:)` and `delay(for:…)`: relays every upstream event to the
/// downstream subscriber from an action on the scheduler (at once, or after a fixed interval),
/// serialized and in order; requests and cancellation go straight upstream.
///
/// **Ownership:** retained by the upstream publisher (as its subscriber), by the downstream subscriber
/// (as its subscription) and by each scheduled action until it has run; it drops both neighbours on
/// completion or cancel, which breaks the cycle.
///
/// **Thread safety:** safe to call from any thread.
internal final class ScheduledRelay<Downstream: Subscriber, Context: Scheduler>: Subscriber, Subscription,
    ScheduledDeliverer, CustomStringConvertible, CustomReflectable, @unchecked Sendable
{
    // @unchecked Sendable: `core` is only touched inside `lock`; everything else is immutable.
    typealias Input = Downstream.Input
    typealias Failure = Downstream.Failure

    /// When the relayed events are delivered.
    enum Timing {
        /// At the scheduler's next opportunity (`receive(on:)`).
        case immediately
        /// After the interval, measured from the moment upstream sent the event (`delay`).
        case after(Context.SchedulerTimeType.Stride, tolerance: Context.SchedulerTimeType.Stride)
    }

    private let name: String
    private let scheduler: Context
    private let timing: Timing
    private let options: Context.SchedulerOptions?
    private let lock = Lock()
    private var core: ScheduledDelivery<Downstream>  // Guarded by lock.

    init(name: String, downstream: Downstream, scheduler: Context, timing: Timing, options: Context.SchedulerOptions?) {
        self.name = name
        self.scheduler = scheduler
        self.timing = timing
        self.options = options
        core = ScheduledDelivery(downstream: downstream, demandMode: .forwarded)
    }

    var description: String { name }

    var customMirror: Mirror { Mirror(self, children: []) }

    func withDelivery<Result>(_ body: (inout ScheduledDelivery<Downstream>) -> Result) -> Result {
        lock.withLock { body(&core) }
    }

    func receive(subscription: any Subscription) {
        let downstream = lock.withLock { core.subscriptionReceived(subscription) }
        if let downstream {
            downstream.receive(subscription: self)
        } else {
            subscription.cancel()
        }
    }

    func receive(_ input: Input) -> Subscribers.Demand {
        let accepted = lock.withLock { () -> Bool in
            guard core.isActive else { return false }
            core.enqueue(input)
            return true
        }
        if accepted { scheduleDelivery() }
        return .none
    }

    func receive(completion: Subscribers.Completion<Failure>) {
        if lock.withLock({ core.enqueueCompletion(completion) }) {
            scheduleDelivery()
        }
    }

    func request(_ demand: Subscribers.Demand) {
        // A demand of zero asks for nothing; Combine does not trap on it, and neither do we.
        guard demand > 0 else { return }
        lock.withLock { core.demandRequested(demand) }?.request(demand)
    }

    func cancel() {
        lock.withLock { core.cancelled() }?.cancel()
    }

    /// One scheduled action per relayed event: each is that event's credit.
    private func scheduleDelivery() {
        switch timing {
        case .immediately:
            scheduler.schedule(options: options) { self.creditArrived() }
        case .after(let interval, let tolerance):
            let due = scheduler.now.advanced(by: interval)
            scheduler.schedule(after: due, tolerance: tolerance, options: options) { self.creditArrived() }
        }
    }
}
