import Foundation

extension Publisher {
    /// Resubscribes to the upstream publisher after it fails, waiting an exponentially growing,
    /// jittered delay on `scheduler` before each new attempt, at most `maxRetries` times.
    ///
    /// Not in Combine. Combine's `retry(_:)` resubscribes at once; this one waits
    /// ``Backoff/delay(forRetry:)`` before retry *n* (or the delay `retryAfter` reads from the
    /// error, such as an HTTP `Retry-After`, capped by ``Backoff/maximum``), so that a failing
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

/// How long to wait before each retry: exponential growth from a base delay, capped, with optional
/// "full jitter" (a uniformly random delay between zero and the computed one).
///
/// Not in Combine. Retry *n* (counting from 0) waits `min(maximum, base × multiplier^n)` before
/// jitter. The arithmetic saturates at ``maximum``, so a huge `n` never overflows or traps. Delays
/// are computed in whole nanoseconds.
///
///     let backoff = Backoff(base: .milliseconds(100), maximum: .seconds(1), jitter: .none)
///     let delays = (0..<5).map { backoff.delay(forRetry: $0) }
///     print(delays)
///     // Prints: [0.1 seconds, 0.2 seconds, 0.4 seconds, 0.8 seconds, 1.0 seconds]
///
/// **Ownership:** a value.
///
/// **Thread safety:** value type; `Sendable`. The random source must be safe to call from any thread.
public struct Backoff: Sendable, CustomStringConvertible {
    /// Whether, and how, the computed delay is randomized.
    ///
    /// **Thread safety:** value type; not shared.
    public enum Jitter: Sendable, Equatable, Hashable {
        /// Wait exactly the computed delay.
        case none
        /// Wait a uniformly random delay in `0...computed` ("full jitter"), so that many clients
        /// that failed together do not retry together.
        case full
    }

    /// The delay before the first retry, before jitter. Negative counts as zero.
    public var base: Duration

    /// The factor by which the delay grows with each retry; below one (or not a number) counts as one.
    public var multiplier: Double

    /// The cap on every delay, including one asked for by the error. Negative counts as zero.
    public var maximum: Duration

    /// Whether the delay is randomized.
    public var jitter: Jitter

    /// Picks a number of nanoseconds in the given range for ``Jitter/full``; injectable so tests are
    /// deterministic. A result outside the range is clamped into it.
    public var random: @Sendable (ClosedRange<Int>) -> Int

    /// Creates a backoff policy.
    ///
    /// - Parameters:
    ///   - base: The delay before the first retry, before jitter.
    ///   - multiplier: The growth factor per retry; 2 by default.
    ///   - maximum: The cap on every delay.
    ///   - jitter: ``Jitter/full`` by default.
    ///   - random: The random source for jitter; the system generator by default.
    public init(
        base: Duration,
        multiplier: Double = 2,
        maximum: Duration,
        jitter: Jitter = .full,
        random: @escaping @Sendable (ClosedRange<Int>) -> Int = { Int.random(in: $0) }
    ) {
        self.base = base
        self.multiplier = multiplier
        self.maximum = maximum
        self.jitter = jitter
        self.random = random
    }

    public var description: String {
        "Backoff(base: \(base), multiplier: \(multiplier), maximum: \(maximum), jitter: \(jitter))"
    }

    /// The delay before retry `retry` (0 for the first retry) before jitter: `min(maximum, base × multiplier^retry)`.
    public func ceiling(forRetry retry: Int) -> Duration {
        .nanoseconds(ceilingNanoseconds(forRetry: retry))
    }

    /// The delay to wait before retry `retry` (0 for the first retry), with jitter applied.
    public func delay(forRetry retry: Int) -> Duration {
        .nanoseconds(delayNanoseconds(forRetry: retry))
    }

    /// A delay asked for by the server (such as `Retry-After`), capped by ``maximum``; never negative.
    public func cappedHint(_ hint: Duration) -> Duration {
        .nanoseconds(Swift.min(Swift.max(0, hint.saturatingNanoseconds), maximumNanoseconds))
    }

    internal var maximumNanoseconds: Int { Swift.max(0, maximum.saturatingNanoseconds) }

    internal func ceilingNanoseconds(forRetry retry: Int) -> Int {
        let cap = maximumNanoseconds
        let base = Swift.min(Swift.max(0, self.base.saturatingNanoseconds), cap)
        let factor = multiplier >= 1 ? multiplier : 1
        let grown = Double(base) * Foundation.pow(factor, Double(Swift.max(0, retry)))
        // `!(a < b)` is also true for NaN and infinity: those saturate to the cap.
        guard grown < Double(cap) else { return cap }
        return Int(grown)
    }

    internal func delayNanoseconds(forRetry retry: Int) -> Int {
        let ceiling = ceilingNanoseconds(forRetry: retry)
        switch jitter {
        case .none: return ceiling
        case .full: return Swift.min(Swift.max(0, random(0...ceiling)), ceiling)
        }
    }
}

extension Duration {
    /// This duration in whole nanoseconds, saturating at `Int.min` / `Int.max`.
    fileprivate var saturatingNanoseconds: Int {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = Int(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        let (sum, sumOverflow) = scaled.addingReportingOverflow(Int(attoseconds / 1_000_000_000))
        if sumOverflow { return seconds < 0 ? .min : .max }
        return sum
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
                    delay = Swift.min(Swift.max(0, hint.saturatingNanoseconds), backoff.maximumNanoseconds)
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
                let cancellable = scheduler.schedule(
                    after: scheduler.now.advanced(by: interval),
                    interval: Swift.max(interval, .nanoseconds(1)),
                    tolerance: scheduler.minimumTolerance,
                    options: options
                ) { self.timerFired(generation) }
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

/// The state of a `retry(_:withBackoff:…)` subscription: which attempt runs, the downstream demand,
/// the retries used and the backoff timer.
///
/// **Ownership:** value type, stored in its subscription.
///
/// **Thread safety:** value type; not shared. Guarded by its subscription's lock.
internal struct RetryWithBackoffStateMachine<Downstream: Subscriber, Upstream> {
    enum SubscriptionAction {
        case none
        case cancel
        case request(Subscribers.Demand)
    }

    enum CompletionAction {
        case none
        /// Pass the completion downstream: upstream finished, or failed on its last attempt.
        case complete(Downstream)
        /// Ask `shouldRetry` and the backoff about retry number `retry`, then call ``decided(attempt:retrying:)``.
        case decide(retry: Int)
    }

    enum DecisionAction {
        case none
        /// Give up: pass the failure downstream.
        case fail(Downstream)
        /// Schedule the backoff timer of this generation.
        case arm(generation: UInt64)
    }

    private enum State {
        /// Attempt `attempt` subscribed upstream and waits for its subscription. Next: `.running`, `.terminal`.
        case subscribing(attempt: Int)
        /// Attempt `attempt` runs. Next: `.deciding`, `.terminal`.
        case running(attempt: Int, upstream: any Subscription)
        /// Attempt `attempt` failed; the owner consults `shouldRetry` outside the lock. Next: `.waiting`, `.terminal`.
        case deciding(attempt: Int)
        /// Waiting for the backoff timer before attempt `attempt`. Next: `.subscribing`, `.terminal`.
        case waiting(attempt: Int)
        /// Completed or cancelled. Final.
        case terminal
    }

    private let maxRetries: Int
    private var state = State.subscribing(attempt: 0)
    /// Released on completion or cancel.
    private var downstream: Downstream?
    /// The publisher each attempt subscribes to; released on completion or cancel, since a publisher
    /// that holds on to its subscribers would otherwise keep this subscription alive.
    private var upstreamPublisher: Upstream?
    private var demand = Subscribers.Demand.none
    private var retriesUsed = 0
    private var timer = TimerSlot()

    init(downstream: Downstream, upstream: Upstream, maxRetries: Int) {
        self.downstream = downstream
        upstreamPublisher = upstream
        self.maxRetries = maxRetries
    }

    /// Returns the publisher to subscribe attempt `attempt` to, if that attempt is due.
    func upstreamToSubscribe(attempt: Int) -> Upstream? {
        guard case .subscribing(attempt) = state else { return nil }
        return upstreamPublisher
    }

    mutating func subscriptionReceived(_ subscription: any Subscription, attempt: Int) -> SubscriptionAction {
        guard case .subscribing(attempt) = state else { return .cancel }
        state = .running(attempt: attempt, upstream: subscription)
        return demand > 0 ? .request(demand) : .none
    }

    /// Returns the downstream to deliver to, taking one from the demand, or `nil` to drop the value.
    mutating func valueReceived(attempt: Int) -> Downstream? {
        guard case .running(attempt, _) = state, demand > 0 else { return nil }
        demand -= 1
        return downstream
    }

    /// Downstream returned more demand from `receive(_:)`; it also goes upstream as the return value.
    mutating func demandReturned(_ additional: Subscribers.Demand) {
        if case .terminal = state { return }
        demand += additional
    }

    mutating func completionReceived(
        _ completion: Subscribers.Completion<Downstream.Failure>,
        attempt: Int
    ) -> CompletionAction {
        switch state {
        case .subscribing(attempt), .running(attempt, _):
            break
        default:
            return .none
        }
        guard case .failure = completion, retriesUsed < maxRetries else {
            return finish().map(CompletionAction.complete) ?? .none
        }
        state = .deciding(attempt: attempt)
        return .decide(retry: retriesUsed)
    }

    mutating func decided(attempt: Int, retrying: Bool) -> DecisionAction {
        guard case .deciding(attempt) = state else { return .none }
        guard retrying else { return finish().map(DecisionAction.fail) ?? .none }
        retriesUsed += 1
        state = .waiting(attempt: attempt + 1)
        return .arm(generation: timer.rearm().generation)
    }

    /// The scheduler returned the backoff timer; returns it back if it must be cancelled.
    mutating func timerScheduled(_ cancellable: any Cancellable, generation: UInt64) -> (any Cancellable)? {
        guard case .waiting = state else { return cancellable }
        return timer.scheduled(cancellable, generation: generation)
    }

    /// The backoff timer fired: returns the attempt to subscribe, the publisher to subscribe it to and the
    /// timer to cancel, if current.
    mutating func timerFired(generation: UInt64) -> (Int, Upstream, (any Cancellable)?)? {
        guard case .waiting(let attempt) = state, let upstreamPublisher else { return nil }
        let (isCurrent, cancellable) = timer.firedOnce(generation: generation)
        guard isCurrent else { return nil }
        state = .subscribing(attempt: attempt)
        return (attempt, upstreamPublisher, cancellable)
    }

    /// Adds demand; returns the running upstream to forward it to.
    mutating func demandRequested(_ additional: Subscribers.Demand) -> (any Subscription)? {
        switch state {
        case .terminal:
            return nil
        case .running(_, let upstream):
            demand += additional
            return upstream
        case .subscribing, .deciding, .waiting:
            demand += additional
            return nil
        }
    }

    /// Downstream cancelled: returns the upstream subscription and the timer to cancel.
    mutating func cancelled() -> ((any Subscription)?, (any Cancellable)?) {
        var upstream: (any Subscription)?
        if case .running(_, let current) = state { upstream = current }
        state = .terminal
        downstream = nil
        upstreamPublisher = nil
        return (upstream, timer.disarm())
    }

    /// Moves to `.terminal`; returns the downstream to complete.
    private mutating func finish() -> Downstream? {
        state = .terminal
        upstreamPublisher = nil
        defer { downstream = nil }
        return downstream
    }
}
