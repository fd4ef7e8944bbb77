extension Publisher {
    /// Omits the specified number of elements before republishing subsequent elements.
    ///
    /// The first request from downstream is passed upstream increased by `count`, so that the
    /// omitted elements do not use up downstream's demand; later requests pass straight through.
    ///
    ///     let cancellable = [1, 2, 3, 4].publisher
    ///         .dropFirst(2)
    ///         .sink { print($0) }
    ///     // Prints: 3 4 (one per line)
    ///
    /// - Parameter count: The number of elements to omit; must not be negative. The default is 1.
    /// - Returns: A publisher that does not republish the first `count` elements.
    public func dropFirst(_ count: Int = 1) -> Publishers.Drop<Self> {
        Publishers.Drop(upstream: self, count: count)
    }
}

extension Publishers {
    /// A publisher that omits a specified number of elements before republishing later elements.
    ///
    /// **Ownership:** a value; its subscription counts the omitted elements until the stream ends.
    ///
    /// **Thread safety:** value type; safe to subscribe from any thread.
    public struct Drop<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// The number of elements to drop.
        public let count: Int

        /// Creates a publisher that omits the first `count` elements of `upstream`.
        ///
        /// > Warning: A negative count is misuse of the API and traps.
        public init(upstream: Upstream, count: Int) {
            if count < 0 { apiViolation("dropFirst count must not be negative, got \(count)") }
            self.upstream = upstream
            self.count = count
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.subscribe(Inner(downstream: subscriber, count: count))
        }
    }
}

extension Publishers.Drop {
    /// The states of one `dropFirst` subscription.
    ///
    /// **Thread safety:** value type; guarded by its owner's lock.
    private struct DropStateMachine<Downstream> {
        private enum State {
            /// Created, no subscription yet. Next: `.subscribed`, `.terminal`.
            case awaitingSubscription(Downstream)
            /// Forwarding; `hasRequested` once the first request (grown by the count) went up.
            /// Next: `.terminal`.
            case subscribed(upstream: any Subscription, downstream: Downstream, hasRequested: Bool)
            /// Completed or cancelled; everything is released.
            case terminal
        }

        private var state: State

        init(downstream: Downstream) {
            state = .awaitingSubscription(downstream)
        }

        mutating func subscriptionReceived(_ subscription: any Subscription) -> Downstream? {
            guard case .awaitingSubscription(let downstream) = state else { return nil }
            state = .subscribed(upstream: subscription, downstream: downstream, hasRequested: false)
            return downstream
        }

        /// Returns the upstream and what to request from it.
        mutating func demandRequested(
            _ demand: Subscribers.Demand,
            dropping count: Int
        ) -> (any Subscription, Subscribers.Demand)? {
            guard case .subscribed(let upstream, let downstream, let hasRequested) = state else { return nil }
            if hasRequested { return (upstream, demand) }
            state = .subscribed(upstream: upstream, downstream: downstream, hasRequested: true)
            return (upstream, demand + count)
        }

        func downstreamForValue() -> Downstream? {
            if case .subscribed(_, let downstream, _) = state { return downstream }
            return nil
        }

        mutating func upstreamCompleted() -> Downstream? {
            guard case .subscribed(_, let downstream, _) = state else { return nil }
            state = .terminal
            return downstream
        }

        mutating func cancelled() -> (any Subscription)? {
            defer { state = .terminal }
            if case .subscribed(let upstream, _, _) = state { return upstream }
            return nil
        }
    }

    /// The subscription of `dropFirst`.
    ///
    /// **Ownership:** retained by upstream and downstream; releases both on completion or cancel.
    ///
    /// **Thread safety:** `request` and `cancel` are safe from any thread.
    private final class Inner<Downstream: Subscriber>: Subscriber, Subscription, CustomStringConvertible,
        CustomPlaygroundDisplayConvertible
    where Downstream.Input == Output, Downstream.Failure == Failure {
        typealias Input = Output
        typealias Failure = Upstream.Failure

        private let lock = Lock()
        private var machine: DropStateMachine<Downstream>  // Guarded by lock.
        private let count: Int
        private var remaining: Int  // Touched only from upstream's receive calls, which never overlap.

        init(downstream: Downstream, count: Int) {
            machine = DropStateMachine(downstream: downstream)
            self.count = count
            remaining = count
        }

        var description: String { "Drop" }

        var playgroundDescription: Any { description }

        func receive(subscription: any Subscription) {
            guard let downstream = lock.withLock({ machine.subscriptionReceived(subscription) }) else {
                subscription.cancel()
                return
            }
            downstream.receive(subscription: self)
        }

        func receive(_ input: Input) -> Subscribers.Demand {
            guard let downstream = lock.withLock({ machine.downstreamForValue() }) else { return .none }
            if remaining > 0 {
                remaining -= 1
                return .none
            }
            return downstream.receive(input)
        }

        func receive(completion: Subscribers.Completion<Failure>) {
            lock.withLock { machine.upstreamCompleted() }?.receive(completion: completion)
        }

        func request(_ demand: Subscribers.Demand) {
            if demand == .none { apiViolation("demand must not be zero") }
            guard let (upstream, demand) = lock.withLock({ machine.demandRequested(demand, dropping: count) }) else {
                return
            }
            upstream.request(demand)
        }

        func cancel() {
            lock.withLock { machine.cancelled() }?.cancel()
        }
    }
}
