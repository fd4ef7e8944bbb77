import Foundation

extension Publisher {
    /// Resubscribes to the upstream publisher after it fails, waiting an exponentially growing,
    /// jittered delay on `scheduler` before each new attempt, at most `maxRetries` times.
    ///
    /// Not in Combine. Combine's `retry(_:)` resubscribes at once; this one waits
    /// ``Backoff/delay(forRetry:)`` before retry *n* (or the delay `retryAfter` reads from the
    /// error, such as an HTTP `Retry-After`, waited in full: ``Backoff/maximum`` bounds the backoff's own
    /// growth, not what a server asked for; bound that with `shouldRetry`), so that a failing
    /// service is not hammered. There are at most `1 + maxRetries` subscriptions to upstream in
    /// total; a negative `maxRetries` counts as zero. An error for which `shouldRetry` returns
    /// `false`, or the error of the last attempt, is passed downstream at once. Outstanding
    /// downstream demand carries over to each new attempt, so values already delivered are not
    /// requested again. Cancelling during a wait cancels the scheduled attempt.
    ///
    ///     let scheduler = VirtualTimeScheduler()
    ///     let backoff = Backoff(base: .seconds(1), maximum: .seconds(8), jitter: .none)
    ///     let c = Fail<Int, CancellationError>(error: CancellationError())
    ///         .retry(2, withBackoff: backoff, scheduler: scheduler)
    ///         .sink(receiveCompletion: { _ in print(scheduler.now) }, receiveValue: { _ in }); scheduler.run()
    ///     // Prints: 3000000000ns
    ///
    /// - Parameters:
    ///   - maxRetries: The maximum number of resubscriptions after the first subscription.
    ///   - backoff: How long to wait before each retry.
    ///   - scheduler: The scheduler whose clock times the waits, and on which new attempts subscribe.
    ///   - options: Scheduler options for the waits.
    ///   - shouldRetry: Whether an error is worth retrying; `true` for every error by default.
    ///   - retryAfter: A delay the error itself asks for, used instead of the backoff when not `nil`.
    /// - Returns: A publisher that retries its upstream with backoff.
    public func retry<S: Scheduler>(
        _ maxRetries: Int,
        withBackoff backoff: Backoff,
        scheduler: S,
        options: S.SchedulerOptions? = nil,
        shouldRetry: @escaping (Failure) -> Bool = { _ in true },
        retryAfter: ((Failure) -> Duration?)? = nil
    ) -> Publishers.RetryWithBackoff<Self, S> {
        Publishers.RetryWithBackoff(
            upstream: self,
            maxRetries: maxRetries,
            backoff: backoff,
            scheduler: scheduler,
            options: options,
            shouldRetry: shouldRetry,
            retryAfter: retryAfter
        )
    }
}

extension Publishers {
    /// A publisher that resubscribes to its upstream after a failure, waiting a backoff delay first.
    ///
    /// Not in Combine.
    ///
    /// **Ownership:** a value; each subscription is retained by its subscriber until completion or
    /// cancel, and by its backoff timer until it fires or is cancelled.
    ///
    /// **Thread safety:** value type; its subscriptions are safe to call from any thread.
    public struct RetryWithBackoff<Upstream: Publisher, Context: Scheduler>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// The maximum number of resubscriptions after the first subscription.
        public let maxRetries: Int

        /// How long to wait before each retry.
        public let backoff: Backoff

        /// The scheduler that times the waits.
        public let scheduler: Context

        /// Scheduler options for the waits.
        public let options: Context.SchedulerOptions?

        /// Whether an error is worth retrying.
        public let shouldRetry: (Upstream.Failure) -> Bool

        /// A delay the error itself asks for, used instead of the backoff when not `nil`.
        public let retryAfter: ((Upstream.Failure) -> Duration?)?

        /// Creates a publisher that retries `upstream` up to `maxRetries` times with `backoff`.
        public init(
            upstream: Upstream,
            maxRetries: Int,
            backoff: Backoff,
            scheduler: Context,
            options: Context.SchedulerOptions? = nil,
            shouldRetry: @escaping (Upstream.Failure) -> Bool = { _ in true },
            retryAfter: ((Upstream.Failure) -> Duration?)? = nil
        ) {
            self.upstream = upstream
            self.maxRetries = Swift.max(0, maxRetries)
            self.backoff = backoff
            self.scheduler = scheduler
            self.options = options
            self.shouldRetry = shouldRetry
            self.retryAfter = retryAfter
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let inner = Inner(publisher: self, downstream: subscriber)
            subscriber.receive(subscription: inner)
            inner.subscribeFirstAttempt()
        }
    }
}

extension Publishers.RetryWithBackoff {
    /// The subscription of `retry(_:withBackoff:…)`: runs one upstream attempt at a time, keeps the
    /// downstream demand across attempts and arms a cancellable timer for each backoff wait.
    ///
    /// **Ownership:** retained by the downstream subscriber, by the current attempt's upstream and
    /// by its backoff timer; it drops the downstream and cancels upstream or the timer on completion
    /// or cancel.
    ///
    /// **Thread safety:** safe to call from any thread.
    private final class Inner<Downstream: Subscriber>: Subscription, CustomStringConvertible, CustomReflectable,
        @unchecked Sendable
    where Downstream.Input == Output, Downstream.Failure == Failure {
        // @unchecked Sendable: `machine` is only touched inside `lock`; everything else is immutable.
        typealias Machine = RetryWithBackoffStateMachine<Downstream, Upstream>

        private let backoff: Backoff
        private let scheduler: Context
        private let options: Context.SchedulerOptions?
        private let shouldRetry: (Upstream.Failure) -> Bool
        private let retryAfter: ((Upstream.Failure) -> Duration?)?
        private let lock = Lock()
        private var machine: Machine  // Guarded by lock.

        init(publisher: Publishers.RetryWithBackoff<Upstream, Context>, downstream: Downstream) {
            backoff = publisher.backoff
            scheduler = publisher.scheduler
            options = publisher.options
            shouldRetry = publisher.shouldRetry
            retryAfter = publisher.retryAfter
            machine = Machine(downstream: downstream, upstream: publisher.upstream, maxRetries: publisher.maxRetries)
        }

        var description: String { "RetryWithBackoff" }

        var customMirror: Mirror { Mirror(self, children: []) }

        func subscribeFirstAttempt() {
            lock.withLock { machine.upstreamToSubscribe(attempt: 0) }?.subscribe(Attempt(inner: self, attempt: 0))
        }

        func request(_ demand: Subscribers.Demand) {
            guard demand > 0 else { apiViolation("RetryWithBackoff requested a demand of zero") }
            lock.withLock { machine.demandRequested(demand) }?.request(demand)
        }

        func cancel() {
            let (upstream, timer) = lock.withLock { machine.cancelled() }
            timer?.cancel()
            upstream?.cancel()
        }

        // MARK: Events from an attempt

        fileprivate func receive(subscription: any Subscription, attempt: Int) {
            switch lock.withLock({ machine.subscriptionReceived(subscription, attempt: attempt) }) {
            case .cancel:
                subscription.cancel()
            case .request(let demand):
                subscription.request(demand)
            case .none:
                break
            }
        }

        fileprivate func receive(_ input: Output, attempt: Int) -> Subscribers.Demand {
            guard let downstream = lock.withLock({ machine.valueReceived(attempt: attempt) }) else { return .none }
            let demand = downstream.receive(input)
            if demand > 0 { lock.withLock { machine.demandReturned(demand) } }
            return demand
        }

        fileprivate func receive(completion: Subscribers.Completion<Failure>, attempt: Int) {
            switch lock.withLock({ machine.completionReceived(completion, attempt: attempt) }) {
            case .none:
                break
            case .complete(let downstream):
                downstream.receive(completion: completion)
            case .decide(let retry):
                guard case .failure(let error) = completion else { return }
                decide(after: error, attempt: attempt, retry: retry)
            }
        }

        /// Consults the user's closures outside the lock, then either arms the backoff timer or gives up.
        private func decide(after error: Failure, attempt: Int, retry: Int) {
            var delay: Int?
            if shouldRetry(error) {
                if let hint = retryAfter?(error) {
                    delay = Swift.max(0, hint.saturatingNanoseconds)
                } else {
                    delay = backoff.delayNanoseconds(forRetry: retry)
                }
            }
            switch lock.withLock({ machine.decided(attempt: attempt, retrying: delay != nil) }) {
            case .none:
                break
            case .fail(let downstream):
                downstream.receive(completion: .failure(error))
            case .arm(let generation):
                let interval = Context.SchedulerTimeType.Stride.nanoseconds(delay ?? 0)
                let cancellable = scheduler.scheduleSlotTimer(
                    after: interval,
                    repeating: Swift.max(interval, .nanoseconds(1)),
                    options: options
                ) {
                    self.timerFired(generation)
                }
                lock.withLock { machine.timerScheduled(cancellable, generation: generation) }?.cancel()
            }
        }

        private func timerFired(_ generation: UInt64) {
            guard let (attempt, upstream, timer) = lock.withLock({ machine.timerFired(generation: generation) }) else {
                return
            }
            timer?.cancel()
            upstream.subscribe(Attempt(inner: self, attempt: attempt))
        }
    }

    /// The subscriber of one attempt: tags every upstream event with the attempt's number, so that
    /// a late event from an earlier attempt is ignored.
    ///
    /// **Ownership:** retained by that attempt's upstream; retains the subscription.
    ///
    /// **Thread safety:** immutable; forwards to the thread-safe subscription.
    private struct Attempt<Downstream: Subscriber>: Subscriber, CustomStringConvertible
    where Downstream.Input == Output, Downstream.Failure == Failure {
        typealias Input = Upstream.Output
        typealias Failure = Upstream.Failure

        let inner: Inner<Downstream>
        let attempt: Int
        let combineIdentifier = CombineIdentifier()

        var description: String { "RetryWithBackoff" }

        func receive(subscription: any Subscription) {
            inner.receive(subscription: subscription, attempt: attempt)
        }

        func receive(_ input: Input) -> Subscribers.Demand {
            inner.receive(input, attempt: attempt)
        }

        func receive(completion: Subscribers.Completion<Failure>) {
            inner.receive(completion: completion, attempt: attempt)
        }
    }
}
