extension Publisher {
    /// Collects up to the specified number of elements, and then emits a single array of the
    /// collection.
    ///
    /// Each unit of downstream demand is passed upstream as `count` elements. When upstream
    /// finishes, a partial last array is published; when it fails, the partial array is discarded.
    ///
    ///     let cancellable = [1, 2, 3, 4, 5].publisher
    ///         .collect(2)
    ///         .sink { print($0) }
    ///     // Prints: [1, 2] [3, 4] [5] (one per line)
    ///
    /// - Parameter count: The maximum number of received elements to buffer; must be positive.
    /// - Returns: A publisher that collects up to the specified number of elements, and then
    ///   publishes them as an array.
    public func collect(_ count: Int) -> Publishers.CollectByCount<Self> {
        Publishers.CollectByCount(upstream: self, count: count)
    }
}

extension Publishers {
    /// A publisher that buffers a maximum number of items and publishes them as arrays.
    ///
    /// **Ownership:** a value; its subscription holds the current buffer until it is published.
    ///
    /// **Thread safety:** value type; safe to subscribe from any thread.
    public struct CollectByCount<Upstream: Publisher>: Publisher {
        public typealias Output = [Upstream.Output]
        public typealias Failure = Upstream.Failure

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// The maximum number of received elements to buffer before publishing.
        public let count: Int

        /// Creates a publisher that publishes the elements of `upstream` in arrays of `count`.
        ///
        /// > Warning: A count below one is misuse of the API and traps.
        public init(upstream: Upstream, count: Int) {
            if count < 1 { apiViolation("collect count must be positive, got \(count)") }
            self.upstream = upstream
            self.count = count
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.subscribe(Inner(downstream: subscriber, count: count))
        }
    }
}

extension Publishers.CollectByCount {
    /// The subscription of `collect(_:)`: multiplies demand by the count and fills one buffer.
    ///
    /// **Ownership:** retained by upstream and downstream; releases both on completion or cancel.
    ///
    /// **Thread safety:** `request` and `cancel` are safe from any thread.
    private final class Inner<Downstream: Subscriber>: Subscriber, Subscription, CustomStringConvertible,
        CustomPlaygroundDisplayConvertible
    where Downstream.Input == Output, Downstream.Failure == Failure {
        typealias Input = Upstream.Output
        typealias Failure = Upstream.Failure

        private let lock = Lock()
        private var machine: ForwardingStateMachine<Downstream>  // Guarded by lock.
        private let count: Int
        private var buffer: [Input] = []  // Touched only from upstream's receive calls, which never overlap.

        init(downstream: Downstream, count: Int) {
            machine = ForwardingStateMachine(downstream: downstream)
            self.count = count
            buffer.reserveCapacity(Swift.min(count, 1024))
        }

        var description: String { "CollectByCount" }

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
            buffer.append(input)
            guard buffer.count == count else { return .none }
            let full = buffer
            buffer.removeAll(keepingCapacity: true)
            return downstream.receive(full) * count
        }

        func receive(completion: Subscribers.Completion<Failure>) {
            guard let downstream = lock.withLock({ machine.upstreamCompleted() }) else { return }
            let rest = buffer
            buffer = []
            if case .finished = completion, !rest.isEmpty {
                _ = downstream.receive(rest)
            }
            downstream.receive(completion: completion)
        }

        func request(_ demand: Subscribers.Demand) {
            if demand == .none { apiViolation("demand must not be zero") }
            lock.withLock { machine.upstreamForDemand() }?.request(demand * count)
        }

        func cancel() {
            lock.withLock { machine.cancelled() }?.cancel()
        }
    }
}
