/// The part every scheduler-driven operator shares (`receive(on:)`, `delay`, `debounce`, `throttle`):
/// the neighbours' lifecycle, downstream's demand, and the events waiting for their scheduled
/// delivery, handed out one deliverer at a time through a ``SerialDeliveryQueue``.
///
/// An operator keeps one of these in its state machine beside what is particular to it (a held
/// value, a window, a timer), decides *when* an event is produced, and lets ``ScheduledDeliverer``
/// run the delivery loop.
///
/// **Ownership:** value type, stored in its operator's state machine.
///
/// **Thread safety:** value type; not shared. Guarded by its operator's lock.
internal struct ScheduledDelivery<Downstream: Subscriber> {
    typealias Completion = Subscribers.Completion<Downstream.Failure>

    enum Event {
        case value(Downstream.Input)
        case completion(Completion)
    }

    /// What the deliverer must hand downstream next.
    enum Delivery {
        case value(Downstream, Downstream.Input)
        case completion(Downstream, Completion)
    }

    /// Where the demand downstream asks for goes.
    enum DemandMode {
        /// Straight to upstream (`receive(on:)`, `delay`): upstream's values are relayed one for one.
        case forwarded
        /// Counted here; upstream is asked for `.unlimited` (`debounce`, `throttle`): a value that
        /// comes due without demand is dropped.
        case counted
    }

    private enum Lifecycle {
        /// Waiting for the upstream subscription. Next: `.active`, `.terminal`.
        case awaitingSubscription(Downstream)
        /// Upstream is running. Next: `.cut`, `.draining`, `.terminal`.
        case active(upstream: any Subscription, downstream: Downstream)
        /// The operator cancelled upstream to end the stream itself (`timeout`); its completion is
        /// not queued yet. Next: `.draining`, `.terminal`.
        case cut(Downstream)
        /// Upstream completed; the queued events, the completion last, wait for delivery. Next: `.terminal`.
        case draining(Downstream)
        /// The completion was handed downstream, or the subscription was cancelled. Final.
        case terminal
    }

    let demandMode: DemandMode
    private var lifecycle: Lifecycle
    /// What downstream asked for and has not received (``DemandMode/counted`` only).
    private(set) var demand = Subscribers.Demand.none
    private var queue = SerialDeliveryQueue<Event>()

    init(downstream: Downstream, demandMode: DemandMode) {
        lifecycle = .awaitingSubscription(downstream)
        self.demandMode = demandMode
    }

    /// Whether upstream is running (subscribed, not completed, not cancelled).
    var isActive: Bool {
        if case .active = lifecycle { return true }
        return false
    }

    /// The upstream subscription, while upstream runs.
    var upstream: (any Subscription)? {
        if case .active(let upstream, _) = lifecycle { return upstream }
        return nil
    }

    /// Returns the downstream to pass the subscription to, or `nil` if it must be cancelled.
    mutating func subscriptionReceived(_ subscription: any Subscription) -> Downstream? {
        guard case .awaitingSubscription(let downstream) = lifecycle else { return nil }
        lifecycle = .active(upstream: subscription, downstream: downstream)
        return downstream
    }

    /// Downstream asked for more. Returns the upstream to pass it to (``DemandMode/forwarded``).
    mutating func demandRequested(_ additional: Subscribers.Demand) -> (any Subscription)? {
        switch (demandMode, lifecycle) {
        case (.forwarded, .active(let upstream, _)):
            return upstream
        case (.counted, .active), (.counted, .cut), (.counted, .draining):
            demand += additional
            return nil
        default:
            return nil
        }
    }

    /// Takes one unit of counted demand for a value that comes due; `false` if there is none (the
    /// value is then dropped).
    mutating func takeDemand() -> Bool {
        guard demand > 0 else { return false }
        demand -= 1
        return true
    }

    /// Queues a value; the caller arranges exactly one credit for it (a scheduled action, or
    /// ``creditArrived()`` right away).
    mutating func enqueue(_ value: Downstream.Input) {
        queue.enqueue(.value(value))
    }

    /// Upstream completed, or the operator ended the stream after ``cutUpstream()``: queues the
    /// completion behind the waiting values. Returns `false` if the stream had already ended
    /// (nothing was queued, no credit is due).
    mutating func enqueueCompletion(_ completion: Completion) -> Bool {
        switch lifecycle {
        case .active(_, let downstream), .cut(let downstream):
            lifecycle = .draining(downstream)
            queue.enqueue(.completion(completion))
            return true
        case .awaitingSubscription, .draining, .terminal:
            return false
        }
    }

    /// The operator ends the stream itself: returns the upstream to cancel, or `nil` if upstream is
    /// not running. The completion follows with ``enqueueCompletion(_:)``.
    mutating func cutUpstream() -> (any Subscription)? {
        guard case .active(let upstream, let downstream) = lifecycle else { return nil }
        lifecycle = .cut(downstream)
        return upstream
    }

    /// A credit arrived: returns what the caller must deliver now, if anything.
    mutating func creditArrived() -> Delivery? {
        guard let event = queue.creditArrived() else { return nil }
        return delivery(for: event)
    }

    /// The caller delivered; counts the demand downstream returned (or returns the upstream to pass
    /// it to) and returns what to deliver next.
    mutating func deliveryFinished(returned: Subscribers.Demand) -> (next: Delivery?, forward: (any Subscription)?) {
        var forward: (any Subscription)?
        if returned > 0 { forward = demandRequested(returned) }
        guard let event = queue.deliveryFinished() else { return (nil, forward) }
        return (delivery(for: event), forward)
    }

    /// Downstream cancelled: returns the upstream subscription to cancel.
    mutating func cancelled() -> (any Subscription)? {
        let upstream = self.upstream
        lifecycle = .terminal
        queue.removeAll()
        return upstream
    }

    private mutating func delivery(for event: Event) -> Delivery {
        let downstream: Downstream
        switch lifecycle {
        case .active(_, let current), .cut(let current), .draining(let current):
            downstream = current
        case .awaitingSubscription, .terminal:
            internalInconsistency("scheduled event \(event) delivered in \(lifecycle)")
        }
        switch event {
        case .value(let value):
            return .value(downstream, value)
        case .completion(let completion):
            lifecycle = .terminal
            queue.removeAll()
            return .completion(downstream, completion)
        }
    }
}
