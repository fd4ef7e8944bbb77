extension Publisher {
    /// Collects elements by a given time-grouping strategy, and emits a single array of the collection.
    ///
    /// With `.byTime(scheduler, stride)`, a timer on `scheduler` fires every `stride` from subscription
    /// and each tick delivers the elements collected since the last one (an empty tick delivers
    /// nothing); upstream is asked for an unlimited number of elements. With
    /// `.byTimeOrCount(scheduler, stride, count)`, a group also goes out as soon as it holds `count`
    /// elements (the periodic timer is not reset by that), and upstream is asked for `count` elements
    /// per group downstream requests. A group that is ready while downstream has no demand waits
    /// for it. On finish the remaining elements go out, then the completion; a failure drops them.
    ///
    ///     let scheduler = VirtualTimeScheduler(), subject = PassthroughSubject<Int, Never>()
    ///     let c = subject.collect(.byTime(scheduler, .seconds(1))).sink { print($0) }
    ///     [1, 2, 3].forEach(subject.send); scheduler.advance(by: .seconds(1))
    ///     // Prints: [1, 2, 3]
    ///
    /// - Parameters:
    ///   - strategy: The timing group strategy used by the operator to collect and publish elements.
    ///   - options: Scheduler options to use for the strategy.
    /// - Returns: A publisher that collects elements by a given strategy, and emits a single array of the collection.
    public func collect<S: Scheduler>(
        _ strategy: Publishers.TimeGroupingStrategy<S>,
        options: S.SchedulerOptions? = nil
    ) -> Publishers.CollectByTime<Self, S> {
        Publishers.CollectByTime(upstream: self, strategy: strategy, options: options)
    }
}

extension Publishers {
    /// A strategy for collecting received elements by time, or by time and count.
    ///
    /// **Thread safety:** value type; not shared.
    public enum TimeGroupingStrategy<Context: Scheduler> {
        /// A grouping that collects and periodically publishes items.
        case byTime(Context, Context.SchedulerTimeType.Stride)
        /// A grouping that collects and publishes items periodically or when a buffer reaches a maximum size.
        ///
        /// A count below one is treated as one.
        case byTimeOrCount(Context, Context.SchedulerTimeType.Stride, Int)
    }

    /// A publisher that buffers and periodically publishes its items.
    ///
    /// **Ownership:** a value; each subscription is retained by its subscriber until completion or
    /// cancel, and by its timer until it is cancelled.
    ///
    /// **Thread safety:** value type; its subscriptions are safe to call from any thread.
    public struct CollectByTime<Upstream: Publisher, Context: Scheduler>: Publisher {
        public typealias Output = [Upstream.Output]
        public typealias Failure = Upstream.Failure

        /// The publisher that this publisher receives elements from.
        public let upstream: Upstream

        /// The strategy with which to collect and publish elements.
        public let strategy: TimeGroupingStrategy<Context>

        /// Scheduler options to use for the strategy.
        public let options: Context.SchedulerOptions?

        /// Creates a publisher that collects `upstream`'s elements into arrays according to `strategy`.
        public init(upstream: Upstream, strategy: TimeGroupingStrategy<Context>, options: Context.SchedulerOptions?) {
            self.upstream = upstream
            self.strategy = strategy
            self.options = options
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.subscribe(Inner(publisher: self, downstream: subscriber))
        }
    }
}

extension Publishers.CollectByTime {
    /// The subscription of `collect(_:options:)` by time: buffers elements and a repeating timer
    /// flushes them; deliveries from the timer and from upstream are serialized.
    ///
    /// **Ownership:** retained by the upstream publisher, the downstream subscriber and its timer; it
    /// drops its neighbours and cancels its timer on completion or cancel.
    ///
    /// **Thread safety:** safe to call from any thread.
    private final class Inner<Downstream: Subscriber>: Subscriber, Subscription, CustomStringConvertible,
        CustomReflectable, @unchecked Sendable
    where Downstream.Input == Output, Downstream.Failure == Failure {
        // @unchecked Sendable: `machine` is only touched inside `lock`; everything else is immutable.
        typealias Input = Upstream.Output
        typealias Failure = Upstream.Failure
        typealias Machine = CollectByTimeStateMachine<Downstream, Upstream.Output>

        private let scheduler: Context
        private let stride: Context.SchedulerTimeType.Stride
        private let options: Context.SchedulerOptions?
        private let lock = Lock()
        private var machine: Machine  // Guarded by lock.

        init(publisher: Publishers.CollectByTime<Upstream, Context>, downstream: Downstream) {
            switch publisher.strategy {
            case .byTime(let scheduler, let stride):
                self.scheduler = scheduler
                self.stride = stride
                machine = Machine(downstream: downstream, count: nil)
            case .byTimeOrCount(let scheduler, let stride, let count):
                self.scheduler = scheduler
                self.stride = stride
                machine = Machine(downstream: downstream, count: Swift.max(1, count))
            }
            options = publisher.options
        }

        var description: String { "CollectByTime" }

        var customMirror: Mirror { Mirror(self, children: []) }

        func receive(subscription: any Subscription) {
            guard let downstream = lock.withLock({ machine.subscriptionReceived(subscription) }) else {
                subscription.cancel()
                return
            }
            downstream.receive(subscription: self)
            guard let (generation, initialDemand) = lock.withLock({ machine.timerWanted() }) else { return }
            let cancellable = scheduler.scheduleSlotTimer(after: stride, options: options) {
                self.timerFired(generation)
            }
            lock.withLock { machine.timerScheduled(cancellable, generation: generation) }?.cancel()
            if let initialDemand { subscription.request(initialDemand) }
        }

        func receive(_ input: Input) -> Subscribers.Demand {
            deliver(lock.withLock { machine.valueReceived(input) })
            return .none
        }

        func receive(completion: Subscribers.Completion<Failure>) {
            let (delivery, timer) = lock.withLock { machine.completionReceived(completion) }
            timer?.cancel()
            deliver(delivery)
        }

        func request(_ demand: Subscribers.Demand) {
            guard demand > 0 else { apiViolation("CollectByTime requested a demand of zero") }
            let (delivery, upstreamRequest) = lock.withLock { machine.demandRequested(demand) }
            if let (upstream, demand) = upstreamRequest { upstream.request(demand) }
            deliver(delivery)
        }

        func cancel() {
            let (upstream, timer) = lock.withLock { machine.cancelled() }
            timer?.cancel()
            upstream?.cancel()
        }

        private func timerFired(_ generation: UInt64) {
            deliver(lock.withLock { machine.timerFired(generation: generation) })
        }

        private func deliver(_ first: Machine.Delivery?) {
            var next = first
            while let delivery = next {
                var demand = Subscribers.Demand.none
                switch delivery {
                case .group(let downstream, let group):
                    demand = downstream.receive(group)
                case .completion(let downstream, let completion, let timer):
                    timer?.cancel()
                    downstream.receive(completion: completion)
                }
                let (following, upstreamRequest) = lock.withLock { machine.deliveryFinished(additionalDemand: demand) }
                if let (upstream, demand) = upstreamRequest { upstream.request(demand) }
                next = following
            }
        }
    }
}

/// The state of a `collect` by time subscription: its neighbours, downstream demand, the buffer,
/// its repeating timer and the events waiting for delivery.
///
/// **Ownership:** value type, stored in its subscription.
///
/// **Thread safety:** value type; not shared. Guarded by its subscription's lock.
internal struct CollectByTimeStateMachine<Downstream: Subscriber, Element> where Downstream.Input == [Element] {
    enum Event {
        case group([Element])
        case completion(Subscribers.Completion<Downstream.Failure>)
    }

    /// What the deliverer must hand downstream next; a completion carries the timer to cancel.
    enum Delivery {
        case group(Downstream, [Element])
        case completion(Downstream, Subscribers.Completion<Downstream.Failure>, (any Cancellable)?)
    }

    private enum State {
        /// Waiting for the upstream subscription. Next: `.active`, `.terminal`.
        case awaitingSubscription(Downstream)
        /// Collecting. Next: `.finishing`, `.draining`, `.terminal`.
        case active(upstream: any Subscription, downstream: Downstream)
        /// Upstream finished; buffered elements wait for demand before the completion. Next: `.draining`, `.terminal`.
        case finishing(Downstream)
        /// The completion is queued; queued events drain. Next: `.terminal`.
        case draining(Downstream)
        /// The completion was handed downstream, or the subscription was cancelled. Final.
        case terminal
    }

    /// The group size for `.byTimeOrCount`; `nil` for `.byTime`.
    private let count: Int?
    private var state: State
    private var demand = Subscribers.Demand.none
    private var buffer: [Element] = []
    private var timer = TimerSlot()
    private var queue = SerialDeliveryQueue<Event>()

    init(downstream: Downstream, count: Int?) {
        state = .awaitingSubscription(downstream)
        self.count = count
    }

    /// Returns the downstream to pass the subscription to, or `nil` if it must be cancelled.
    mutating func subscriptionReceived(_ subscription: any Subscription) -> Downstream? {
        guard case .awaitingSubscription(let downstream) = state else { return nil }
        state = .active(upstream: subscription, downstream: downstream)
        return downstream
    }

    /// The subscription reached downstream: returns the timer generation to arm and the demand to
    /// request from upstream at once, or `nil` if no longer active.
    mutating func timerWanted() -> (UInt64, Subscribers.Demand?)? {
        guard case .active = state, !timer.isArmed else { return nil }
        return (timer.rearm().generation, count == nil ? .unlimited : nil)
    }

    /// The scheduler returned the timer; returns it back if it must be cancelled.
    mutating func timerScheduled(_ cancellable: any Cancellable, generation: UInt64) -> (any Cancellable)? {
        guard case .active = state else { return cancellable }
        return timer.scheduled(cancellable, generation: generation)
    }

    mutating func valueReceived(_ value: Element) -> Delivery? {
        guard case .active = state else { return nil }
        buffer.append(value)
        guard let count, buffer.count >= count else { return nil }
        return flushReady(byTimer: false)
    }

    mutating func timerFired(generation: UInt64) -> Delivery? {
        guard case .active = state, timer.isCurrent(generation: generation) else { return nil }
        return flushReady(byTimer: true)
    }

    /// Returns what to deliver, and the timer to cancel.
    mutating func completionReceived(
        _ completion: Subscribers.Completion<Downstream.Failure>
    ) -> (Delivery?, (any Cancellable)?) {
        guard case .active(_, let downstream) = state else { return (nil, nil) }
        let timer = self.timer.disarm()
        if case .failure = completion {
            buffer = []
            state = .draining(downstream)
            queue.enqueue(.completion(completion))
            return (creditArrived(), timer)
        }
        state = .finishing(downstream)
        return (flushReady(byTimer: true), timer)
    }

    /// Returns what to deliver now, and the upstream request to make (`.byTimeOrCount` asks for `count` per group).
    mutating func demandRequested(
        _ additional: Subscribers.Demand
    ) -> (Delivery?, (upstream: any Subscription, demand: Subscribers.Demand)?) {
        switch state {
        case .active(let upstream, _):
            demand += additional
            let request = count.map { (upstream, additional * $0) }
            return (flushReady(byTimer: false), request)
        case .finishing:
            demand += additional
            return (flushReady(byTimer: true), nil)
        case .draining:
            demand += additional
            return (nil, nil)
        case .awaitingSubscription, .terminal:
            return (nil, nil)
        }
    }

    /// The caller delivered; adds the demand downstream returned and returns what to deliver next
    /// and the upstream request to make.
    mutating func deliveryFinished(
        additionalDemand: Subscribers.Demand
    ) -> (Delivery?, (upstream: any Subscription, demand: Subscribers.Demand)?) {
        var request: (upstream: any Subscription, demand: Subscribers.Demand)?
        if additionalDemand > 0 {
            // Still delivering, so any group this makes ready is credited to this loop, not returned.
            (_, request) = demandRequested(additionalDemand)
        }
        guard let event = queue.deliveryFinished() else { return (nil, request) }
        return (delivery(for: event), request)
    }

    /// Downstream cancelled: returns the upstream subscription and the timer to cancel.
    mutating func cancelled() -> ((any Subscription)?, (any Cancellable)?) {
        var upstream: (any Subscription)?
        if case .active(let current, _) = state { upstream = current }
        state = .terminal
        buffer = []
        queue.removeAll()
        return (upstream, timer.disarm())
    }

    /// Queues every group that is ready and has demand (and, when finishing with an empty buffer, the
    /// completion), crediting each at once; returns the first event if the caller must deliver it.
    ///
    /// `byTimer` flushes a partial group (a tick or the finish); otherwise only full groups go out.
    private mutating func flushReady(byTimer: Bool) -> Delivery? {
        var first: Event?
        func enqueue(_ event: Event, into queue: inout SerialDeliveryQueue<Event>) {
            queue.enqueue(event)
            if let event = queue.creditArrived() { first = event }
        }
        while demand > 0, !buffer.isEmpty {
            // `.byTime` groups go out only on a tick; `.byTimeOrCount` ones also when full.
            let size = count ?? buffer.count
            guard byTimer || (count != nil && buffer.count >= size) else { break }
            let group: [Element]
            if buffer.count <= size {
                group = buffer
                buffer = []
            } else {
                group = Array(buffer.prefix(size))
                buffer.removeFirst(size)
            }
            demand -= 1
            enqueue(.group(group), into: &queue)
        }
        if case .finishing(let downstream) = state, buffer.isEmpty {
            state = .draining(downstream)
            enqueue(.completion(.finished), into: &queue)
        }
        guard let first else { return nil }
        return delivery(for: first)
    }

    /// A delivery credit for an event queued elsewhere; returns what the caller must deliver.
    private mutating func creditArrived() -> Delivery? {
        guard let event = queue.creditArrived() else { return nil }
        return delivery(for: event)
    }

    private mutating func delivery(for event: Event) -> Delivery {
        let downstream: Downstream
        switch state {
        case .active(_, let current), .finishing(let current), .draining(let current):
            downstream = current
        case .awaitingSubscription, .terminal:
            internalInconsistency("collect event \(event) delivered in \(state)")
        }
        switch event {
        case .group(let group):
            return .group(downstream, group)
        case .completion(let completion):
            state = .terminal
            queue.removeAll()
            return .completion(downstream, completion, timer.disarm())
        }
    }
}
