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
    CustomStringConvertible, CustomReflectable, @unchecked Sendable
{
    // @unchecked Sendable: `machine` is only touched inside `lock`; everything else is immutable.
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
    private var machine: ScheduledRelayStateMachine<Downstream>  // Guarded by lock.

    init(name: String, downstream: Downstream, scheduler: Context, timing: Timing, options: Context.SchedulerOptions?) {
        self.name = name
        self.scheduler = scheduler
        self.timing = timing
        self.options = options
        machine = ScheduledRelayStateMachine(downstream: downstream)
    }

    var description: String { name }

    var customMirror: Mirror { Mirror(self, children: []) }

    func receive(subscription: any Subscription) {
        let downstream = lock.withLock { machine.subscriptionReceived(subscription) }
        if let downstream {
            downstream.receive(subscription: self)
        } else {
            subscription.cancel()
        }
    }

    func receive(_ input: Input) -> Subscribers.Demand {
        if lock.withLock({ machine.eventReceived(.value(input)) }) {
            scheduleDelivery()
        }
        return .none
    }

    func receive(completion: Subscribers.Completion<Failure>) {
        if lock.withLock({ machine.eventReceived(.completion(completion)) }) {
            scheduleDelivery()
        }
    }

    func request(_ demand: Subscribers.Demand) {
        guard demand > 0 else { apiViolation("\(name) requested a demand of zero") }
        lock.withLock { machine.upstream }?.request(demand)
    }

    func cancel() {
        lock.withLock { machine.cancelled() }?.cancel()
    }

    private func scheduleDelivery() {
        switch timing {
        case .immediately:
            scheduler.schedule(options: options) { self.deliver() }
        case .after(let interval, let tolerance):
            let due = scheduler.now.advanced(by: interval)
            scheduler.schedule(after: due, tolerance: tolerance, options: options) { self.deliver() }
        }
    }

    /// Runs on the scheduler, once per relayed event.
    private func deliver() {
        var next = lock.withLock { machine.creditArrived() }
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

/// The state of a ``ScheduledRelay``: its neighbours, and the events waiting for their scheduled delivery.
///
/// **Ownership:** value type, stored in its relay.
///
/// **Thread safety:** value type; not shared. Guarded by the relay's lock.
internal struct ScheduledRelayStateMachine<Downstream: Subscriber> {
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
        /// Relaying; `upstream` is `nil` once upstream has completed. Next: `.terminal`.
        case active(upstream: (any Subscription)?, downstream: Downstream)
        /// The completion was handed downstream, or the subscription was cancelled. Final.
        case terminal
    }

    private var state: State
    private var queue = SerialDeliveryQueue<Event>()

    init(downstream: Downstream) {
        state = .awaitingSubscription(downstream)
    }

    /// The upstream subscription, while there is one.
    var upstream: (any Subscription)? {
        if case .active(let upstream, _) = state { return upstream }
        return nil
    }

    /// Returns the downstream to pass the subscription to, or `nil` if the subscription must be cancelled.
    mutating func subscriptionReceived(_ subscription: any Subscription) -> Downstream? {
        guard case .awaitingSubscription(let downstream) = state else { return nil }
        state = .active(upstream: subscription, downstream: downstream)
        return downstream
    }

    /// Records an upstream event; returns whether a delivery must be scheduled for it.
    mutating func eventReceived(_ event: Event) -> Bool {
        guard case .active(let upstream, let downstream) = state, upstream != nil else { return false }
        if case .completion = event {
            state = .active(upstream: nil, downstream: downstream)
        }
        queue.enqueue(event)
        return true
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

    /// Downstream cancelled: returns the upstream subscription to cancel.
    mutating func cancelled() -> (any Subscription)? {
        let upstream = self.upstream
        state = .terminal
        queue.removeAll()
        return upstream
    }

    private mutating func delivery(for event: Event) -> Delivery {
        guard case .active(let upstream, let downstream) = state else {
            internalInconsistency("relay event \(event) delivered in \(state)")
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
