extension Publisher {
    /// Attempts to recreate a failed subscription with the upstream publisher up to the number of
    /// times you specify.
    ///
    /// Each new attempt is subscribed with the demand downstream has not used up; downstream keeps
    /// the same subscription throughout. After the last retry fails, the failure is republished.
    ///
    ///     let cancellable = flakyRequest  // fails twice, then publishes "ok"
    ///         .retry(2)
    ///         .sink(receiveCompletion: { print($0) }, receiveValue: { print($0) })
    ///     // Prints: ok finished (one per line)
    ///
    /// - Parameter retries: The number of times to attempt to recreate the subscription.
    /// - Returns: A publisher that attempts to recreate its subscription to a failed upstream publisher.
    public func retry(_ retries: Int) -> Publishers.Retry<Self> {
        Publishers.Retry(upstream: self, retries: retries)
    }
}

extension Publishers {
    /// A publisher that attempts to recreate its subscription to a failed upstream publisher.
    ///
    /// **Ownership:** a value; its subscription retains the upstream publisher to resubscribe.
    ///
    /// **Thread safety:** value type; a new attempt is subscribed on the thread the last one failed on.
    public struct Retry<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// The maximum number of retry attempts to perform; `nil` retries without limit.
        public let retries: Int?

        /// Creates a publisher that attempts to recreate its subscription to a failed upstream publisher.
        ///
        /// A negative number of retries does not trap (nor does it in Combine): it retries never,
        /// like zero.
        public init(upstream: Upstream, retries: Int?) {
            self.upstream = upstream
            self.retries = retries
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            Inner(downstream: subscriber, upstream: upstream, retries: retries).subscribeAttempt(generation: 0)
        }
    }
}

extension Publishers.Retry {
    /// The subscription of `retry`: resubscribes upstream after a failure while retries remain,
    /// carrying over the demand downstream has not used up.
    ///
    /// **Ownership:** retained by the current attempt and by downstream; releases both on
    /// completion or cancel.
    ///
    /// **Thread safety:** `request` and `cancel` are safe from any thread.
    private final class Inner<Downstream: Subscriber>: Subscription, CustomStringConvertible,
        CustomPlaygroundDisplayConvertible
    where Downstream.Input == Output, Downstream.Failure == Failure {
        private let lock = Lock()
        private var machine: SequentialStateMachine<Downstream>  // Guarded by lock.
        private var remainingRetries: Int?  // Guarded by lock; `nil` is without limit.
        private let upstream: Upstream

        init(downstream: Downstream, upstream: Upstream, retries: Int?) {
            machine = SequentialStateMachine(downstream: downstream)
            remainingRetries = retries
            self.upstream = upstream
        }

        var description: String { "Retry" }

        var playgroundDescription: Any { description }

        func subscribeAttempt(generation: Int) {
            upstream.subscribe(
                SequentialSource<Output, Failure>(
                    name: "Retry",
                    generation: generation,
                    onSubscription: { [self] in received(subscription: $0, generation: $1) },
                    onValue: { [self] in received($0, generation: $1) },
                    onCompletion: { [self] in received(completion: $0, generation: $1) }
                )
            )
        }

        func request(_ demand: Subscribers.Demand) {
            if demand == .none { apiViolation("demand must not be zero") }
            lock.withLock { machine.demandRequested(demand) }?.request(demand)
        }

        func cancel() {
            lock.withLock { machine.cancelled() }?.cancel()
        }

        private func received(subscription: any Subscription, generation: Int) {
            switch lock.withLock({ machine.subscriptionReceived(subscription, generation: generation) }) {
            case .cancel: subscription.cancel()
            case .handOver(let downstream): downstream.receive(subscription: self)
            case .request(let demand): subscription.request(demand)
            case .none: break
            }
        }

        private func received(_ input: Output, generation: Int) -> Subscribers.Demand {
            guard let downstream = lock.withLock({ machine.valueReceived(generation: generation) }) else {
                return .none
            }
            let more = downstream.receive(input)
            if more > 0 { lock.withLock { machine.demandReturned(more, generation: generation) } }
            return more
        }

        private func received(completion: Subscribers.Completion<Failure>, generation: Int) {
            if case .failure = completion {
                let next = lock.withLock { () -> Int? in
                    guard machine.isActive(generation: generation) else { return nil }
                    switch remainingRetries {
                    case .none:
                        break
                    case .some(let remaining) where remaining > 0:
                        remainingRetries = remaining - 1
                    case .some:
                        return nil
                    }
                    return machine.switchToNext(after: generation)
                }
                if let next {
                    subscribeAttempt(generation: next)
                    return
                }
            }
            lock.withLock { machine.completed(generation: generation) }?.receive(completion: completion)
        }
    }
}
