extension Publisher {
    /// Replaces any errors in the stream with the provided element.
    ///
    /// On failure it publishes `output` and finishes, waiting for downstream demand if it has none.
    ///
    ///     let cancellable = Fail<Int, URLError>(error: URLError(.badURL))
    ///         .replaceError(with: 0)
    ///         .sink { print($0) }
    ///     // Prints: 0
    ///
    /// - Parameter output: An element to emit when the upstream publisher fails.
    /// - Returns: A publisher that replaces an error from upstream with the provided output element.
    public func replaceError(with output: Output) -> Publishers.ReplaceError<Self> {
        Publishers.ReplaceError(upstream: self, output: output)
    }
}

extension Publishers {
    /// A publisher that replaces any errors in the stream with a provided element.
    ///
    /// **Ownership:** a value; its subscription retains the element until the stream ends.
    ///
    /// **Thread safety:** value type; safe to subscribe from any thread.
    public struct ReplaceError<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Never

        /// The element with which to replace errors from the upstream publisher.
        public let output: Upstream.Output

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// Creates a publisher that replaces a failure of `upstream` with `output`.
        public init(upstream: Upstream, output: Output) {
            self.upstream = upstream
            self.output = output
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.subscribe(Inner(downstream: subscriber, output: output))
        }
    }
}

extension Publishers.ReplaceError {
    /// The subscription of `replaceError`: counts downstream demand so the replacement is sent only
    /// when wanted.
    ///
    /// **Ownership:** retained by upstream and downstream; releases both on completion or cancel.
    ///
    /// **Thread safety:** `request` and `cancel` are safe from any thread.
    private final class Inner<Downstream: Subscriber>: Subscriber, Subscription, CustomStringConvertible,
        CustomPlaygroundDisplayConvertible
    where Downstream.Input == Output, Downstream.Failure == Never {
        typealias Input = Output
        typealias Failure = Upstream.Failure

        private let lock = Lock()
        private var machine: ReplacingStateMachine<Downstream>  // Guarded by lock.
        private let output: Output

        init(downstream: Downstream, output: Output) {
            machine = ReplacingStateMachine(downstream: downstream)
            self.output = output
        }

        var description: String { "ReplaceError" }

        var playgroundDescription: Any { description }

        func receive(subscription: any Subscription) {
            guard let downstream = lock.withLock({ machine.subscriptionReceived(subscription) }) else {
                subscription.cancel()
                return
            }
            downstream.receive(subscription: self)
        }

        func receive(_ input: Input) -> Subscribers.Demand {
            guard let downstream = lock.withLock({ machine.valueReceived() }) else { return .none }
            let more = downstream.receive(input)
            if more > 0 { lock.withLock { machine.demandReturned(more) } }
            return more
        }

        func receive(completion: Subscribers.Completion<Failure>) {
            switch completion {
            case .finished:
                lock.withLock { machine.upstreamCompleted() }?.receive(completion: .finished)
            case .failure:
                if case .deliverReplacement(let downstream) = lock.withLock({ machine.replacementNeeded() }) {
                    deliverReplacement(to: downstream)
                }
            }
        }

        func request(_ demand: Subscribers.Demand) {
            if demand == .none { apiViolation("demand must not be zero") }
            switch lock.withLock({ machine.demandRequested(demand) }) {
            case .none:
                break
            case .request(let upstream, let demand):
                upstream.request(demand)
            case .deliverReplacement(let downstream):
                deliverReplacement(to: downstream)
            }
        }

        func cancel() {
            lock.withLock { machine.cancelled() }?.cancel()
        }

        private func deliverReplacement(to downstream: Downstream) {
            _ = downstream.receive(output)
            downstream.receive(completion: .finished)
        }
    }
}
