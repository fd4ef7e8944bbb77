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
    /// An attempt that fails while it is being subscribed (inside `subscribe`, as `Fail` does) is
    /// retried once that `subscribe` returns, from a loop, as in Combine: the stack does not grow
    /// with the number of retries.
    ///
    /// - Parameter retries: The number of times to attempt to recreate the subscription; a
    ///   negative number retries without limit, as in Combine.
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
        /// A negative number of retries does not trap (nor does it in Combine): like Combine, which
        /// counts retries down to zero, it retries without limit, as `nil` does.
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
    /// What `retry` does when an attempt completes: after a failure, while retries remain, it
    /// subscribes upstream again, which gets the demand downstream has not used up; any other
    /// completion goes downstream. The rest is ``SequentialSubscription``'s, which is what downstream sees.
    ///
    /// **Ownership:** retained by its attempts' sources; holds the upstream to resubscribe.
    ///
    /// **Thread safety:** its completions arrive from upstream; its state is guarded by the
    /// subscription's lock, with the machine.
    private final class Inner<Downstream: Subscriber> where Downstream.Input == Output, Downstream.Failure == Failure {
        private let subscription: SequentialSubscription<Downstream>
        private var remainingRetries: Int?  // Guarded by subscription's lock; `nil` is without limit.
        /// Whether a thread runs the resubscription loop (``resubscribe(from:)``). Guarded by
        /// subscription's lock.
        private var isResubscribing = false
        /// The attempt that failed re-entrantly during a resubscription left its successor here, for
        /// the loop to subscribe. Guarded by subscription's lock.
        private var nextAttempt: Int?
        private let upstream: Upstream

        /// What a failure leads to.
        private enum RetryStep {
            /// No retry: the failure goes downstream (or it was stale).
            case none
            /// Subscribe this attempt, then run the resubscription loop.
            case subscribe(Int)
            /// The resubscription loop running below this call subscribes the next attempt.
            case leftToLoop
        }

        init(downstream: Downstream, upstream: Upstream, retries: Int?) {
            subscription = SequentialSubscription(downstream: downstream, name: "Retry")
            // Combine counts retries down to zero, so a negative count never reaches it.
            remainingRetries = retries.flatMap { $0 < 0 ? nil : $0 }
            self.upstream = upstream
        }

        func subscribeAttempt(generation: Int) {
            upstream.subscribe(
                subscription.source(generation: generation) { [self] in received(completion: $0, generation: $1) }
            )
        }

        private func received(completion: Subscribers.Completion<Failure>, generation: Int) {
            if case .failure = completion {
                let step = subscription.withMachine { machine -> RetryStep in
                    guard machine.isCurrent(generation: generation) else { return .none }
                    switch remainingRetries {
                    case .none:
                        break
                    case .some(let remaining) where remaining > 0:
                        remainingRetries = remaining - 1
                    case .some:
                        return .none
                    }
                    guard let next = machine.switchFromCurrent(after: generation) else { return .none }
                    if isResubscribing {
                        // Inside the loop's `subscribe` (a re-entrant failure): the loop goes on.
                        nextAttempt = next
                        return .leftToLoop
                    }
                    isResubscribing = true
                    return .subscribe(next)
                }
                switch step {
                case .leftToLoop:
                    return
                case .subscribe(let first):
                    resubscribe(from: first)
                    return
                case .none:
                    break
                }
            }
            subscription.withMachine { $0.currentCompleted(generation: generation) }?.receive(completion: completion)
        }

        /// Subscribes `first`, then every attempt that failed while the one before was subscribing.
        private func resubscribe(from first: Int) {
            var attempt = first
            while true {
                subscribeAttempt(generation: attempt)
                let next = subscription.lock.withLock { () -> Int? in
                    guard let next = nextAttempt.take() else {
                        isResubscribing = false
                        return nil
                    }
                    return next
                }
                guard let next else { return }
                attempt = next
            }
        }
    }
}
