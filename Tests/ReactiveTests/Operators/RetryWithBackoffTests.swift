import Dispatch
import Reactive
import TestSupport
import Testing

@Suite struct RetryWithBackoffTests {
    /// An upstream whose subscription `index` fails at once with `CodedError(index)`, unless `succeedAt`
    /// says otherwise; records the virtual time of every subscription.
    private final class FlakyService: @unchecked Sendable {
        // @unchecked Sendable: `times` is only touched from the test's thread (virtual time).
        let scheduler: VirtualTimeScheduler
        var times: [Double] = []
        lazy var publisher = ManualPublisher<Int, CodedError> { [unowned self] publisher, index in
            times.append(Double(scheduler.now.nanoseconds) / 1e9)
            if let values = succeedAt(index) {
                values.forEach { publisher.send($0) }
                publisher.send(completion: .finished)
            } else if failImmediately {
                publisher.send(completion: .failure(CodedError(code: index)))
            }
        }
        let succeedAt: (Int) -> [Int]?
        let failImmediately: Bool

        init(
            scheduler: VirtualTimeScheduler,
            failImmediately: Bool = true,
            succeedAt: @escaping (Int) -> [Int]? = { _ in nil }
        ) {
            self.scheduler = scheduler
            self.failImmediately = failImmediately
            self.succeedAt = succeedAt
        }
    }

    private let half = Backoff(base: .seconds(1), maximum: .seconds(100), jitter: .full) { $0.upperBound / 2 }
    private let exact = Backoff(base: .seconds(1), maximum: .seconds(100), jitter: .none)

    @Test func resubscribesAtTheBackoffTimesAndFailsWithTheLastError() {
        let scheduler = VirtualTimeScheduler()
        let service = FlakyService(scheduler: scheduler)
        let subscriber = TimedSubscriber<Int, CodedError>(scheduler: scheduler)
        service.publisher.retry(3, withBackoff: half, scheduler: scheduler).subscribe(subscriber)
        scheduler.run()
        #expect(service.times == [0, 0.5, 1.5, 3.5])
        #expect(subscriber.timeline == ["t=3.5:failure(CodedError(3))"])
    }

    @Test func neverSubscribesMoreThanOnePlusMaxRetriesTimes() {
        for (retries, expected) in [(0, 1), (-5, 1), (1, 2), (4, 5)] {
            let scheduler = VirtualTimeScheduler()
            let service = FlakyService(scheduler: scheduler)
            let subscriber = TrackingSubscriber<Int, CodedError>()
            service.publisher.retry(retries, withBackoff: exact, scheduler: scheduler).subscribe(subscriber)
            scheduler.run()
            #expect(service.publisher.subscriptionCount == expected)
            #expect(subscriber.history == [.subscription, .completion(.failure(CodedError(code: expected - 1)))])
        }
    }

    @Test func anErrorThatShouldNotBeRetriedFailsAtOnce() {
        let scheduler = VirtualTimeScheduler()
        let service = FlakyService(scheduler: scheduler)
        let subscriber = TimedSubscriber<Int, CodedError>(scheduler: scheduler)
        service.publisher
            .retry(5, withBackoff: exact, scheduler: scheduler, shouldRetry: { $0.code < 1 })
            .subscribe(subscriber)
        scheduler.run()
        #expect(service.times == [0, 1])
        #expect(subscriber.timeline == ["t=1:failure(CodedError(1))"])
        #expect(scheduler.pendingActionCount == 0)
    }

    @Test func cancellingDuringTheWaitCancelsTheScheduledRetry() {
        let scheduler = VirtualTimeScheduler()
        let service = FlakyService(scheduler: scheduler)
        let subscriber = TrackingSubscriber<Int, CodedError>()
        service.publisher.retry(3, withBackoff: exact, scheduler: scheduler).subscribe(subscriber)
        #expect(scheduler.pendingActionCount == 1)
        subscriber.cancel()
        #expect(scheduler.pendingActionCount == 0)
        scheduler.advance(by: .seconds(100))
        #expect(service.publisher.subscriptionCount == 1)
        #expect(subscriber.history == [.subscription])
    }

    @Test func cancellingWhileAnAttemptRunsCancelsIt() {
        let scheduler = VirtualTimeScheduler()
        let service = FlakyService(scheduler: scheduler, failImmediately: false)
        let subscriber = TrackingSubscriber<Int, CodedError>()
        service.publisher.retry(3, withBackoff: exact, scheduler: scheduler).subscribe(subscriber)
        subscriber.cancel()
        service.publisher.send(completion: .failure(CodedError(code: 0)))
        scheduler.run()
        #expect(service.publisher.subscriptionCount == 1)
        #expect(service.publisher.subscription?.history == [.requested(.unlimited), .cancelled])
        #expect(subscriber.history == [.subscription])
    }

    @Test func outstandingDemandCarriesOverToTheNextAttempt() {
        let scheduler = VirtualTimeScheduler()
        let service = FlakyService(scheduler: scheduler, failImmediately: false)
        let subscriber = TrackingSubscriber<Int, CodedError>(initialDemand: .max(5))
        service.publisher.retry(3, withBackoff: exact, scheduler: scheduler).subscribe(subscriber)
        service.publisher.send(1)
        service.publisher.send(2)
        service.publisher.send(completion: .failure(CodedError(code: 0)))
        scheduler.advance(by: .seconds(1))
        #expect(service.publisher.subscriptionCount == 2)
        [3, 4, 5, 6].forEach { service.publisher.send($0) }
        #expect(service.publisher.subscriptions.map(\.history) == [[.requested(.max(5))], [.requested(.max(3))]])
        #expect(subscriber.values == [1, 2, 3, 4, 5])
        subscriber.request(.max(1))
        #expect(service.publisher.subscriptions.last?.history == [.requested(.max(3)), .requested(.max(1))])
    }

    @Test func demandRequestedDuringTheWaitIsAskedOfTheNextAttempt() {
        let scheduler = VirtualTimeScheduler()
        let service = FlakyService(scheduler: scheduler, failImmediately: false)
        let subscriber = TrackingSubscriber<Int, CodedError>(initialDemand: .max(1))
        service.publisher.retry(1, withBackoff: exact, scheduler: scheduler).subscribe(subscriber)
        service.publisher.send(completion: .failure(CodedError(code: 0)))
        subscriber.request(.max(2))
        scheduler.advance(by: .seconds(1))
        #expect(service.publisher.subscriptions.map(\.history) == [[.requested(.max(1))], [.requested(.max(3))]])
    }

    @Test func succeedsOnTheThirdAttempt() {
        let scheduler = VirtualTimeScheduler()
        let service = FlakyService(scheduler: scheduler) { index in index == 2 ? [10, 20] : nil }
        let subscriber = TimedSubscriber<Int, CodedError>(scheduler: scheduler)
        service.publisher.retry(5, withBackoff: exact, scheduler: scheduler).subscribe(subscriber)
        scheduler.run()
        #expect(service.times == [0, 1, 3])
        #expect(subscriber.timeline == ["t=3:value(10)", "t=3:value(20)", "t=3:finished"])
        #expect(scheduler.pendingActionCount == 0)
    }

    /// A server's hint is waited in full, even past the backoff's maximum (which bounds only the backoff's
    /// own growth): the retry after a 500 s hint comes at t=505, not at the 10 s cap.
    @Test func aRetryAfterHintIsWaitedInFullEvenPastTheMaximum() {
        let scheduler = VirtualTimeScheduler()
        let service = FlakyService(scheduler: scheduler)
        let capped = Backoff(base: .seconds(1), maximum: .seconds(10), jitter: .none)
        let subscriber = TrackingSubscriber<Int, CodedError>()
        service.publisher
            .retry(
                3,
                withBackoff: capped,
                scheduler: scheduler,
                retryAfter: { error in
                    switch error.code {
                    case 0: .seconds(5)
                    case 1: .seconds(500)
                    default: nil
                    }
                }
            )
            .subscribe(subscriber)
        scheduler.run()
        #expect(service.times == [0, 5, 505, 509])
    }

    @Test func chainIsReleasedAfterFailureSuccessAndCancel() {
        weak var weakSubscription: AnyObject?
        for cancelling in [false, true] {
            do {
                let scheduler = VirtualTimeScheduler()
                let service = FlakyService(scheduler: scheduler)
                let subscriber = TrackingSubscriber<Int, CodedError>()
                service.publisher.retry(2, withBackoff: exact, scheduler: scheduler).subscribe(subscriber)
                weakSubscription = subscriber.subscription as AnyObject?
                if cancelling { subscriber.cancel() }
                scheduler.run()
            }
            #expect(weakSubscription == nil)
        }
        do {
            let scheduler = VirtualTimeScheduler()
            let service = FlakyService(scheduler: scheduler) { index in index == 1 ? [1] : nil }
            let subscriber = TrackingSubscriber<Int, CodedError>()
            service.publisher.retry(2, withBackoff: exact, scheduler: scheduler).subscribe(subscriber)
            weakSubscription = subscriber.subscription as AnyObject?
            scheduler.run()
            #expect(subscriber.history == [.subscription, .value(1), .completion(.finished)])
        }
        #expect(weakSubscription == nil)
    }

    @Test func concurrentRequestsCancelAndRetriesStayWithinLimits() {
        for _ in 0..<20 {
            let scheduler = VirtualTimeScheduler()
            let upstream = ManualPublisher<Int, CodedError> { publisher, index in
                publisher.send(index)
                publisher.send(completion: .failure(CodedError(code: index)))
            }
            let subscriber = OverlapCheckingSubscriber<Int, CodedError>(initialDemand: .max(1))
            upstream.retry(6, withBackoff: exact, scheduler: scheduler).subscribe(subscriber)
            DispatchQueue.concurrentPerform(iterations: 6) { index in
                switch index {
                case 0, 1: for _ in 0..<20 { scheduler.advance(by: .seconds(8)) }
                case 2: subscriber.cancel()
                default: for _ in 0..<5 { subscriber.request(.max(1)) }
                }
            }
            scheduler.run()
            #expect(upstream.subscriptionCount <= 7)
            #expect(subscriber.received.count <= 1 + 3 * 5)
            #expect(subscriber.completions <= 1)
            #expect(subscriber.overlaps == 0)
        }
    }
}

@Suite struct BackoffTests {
    @Test func delaysGrowExponentiallyUpToTheMaximum() {
        let backoff = Backoff(base: .milliseconds(100), maximum: .seconds(1), jitter: .none)
        #expect(
            (0..<6).map { backoff.delay(forRetry: $0) } == [
                .milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .seconds(1),
                .seconds(1),
            ]
        )
        let printed = "\((0..<5).map { backoff.delay(forRetry: $0) })"
        #expect(printed == "[0.1 seconds, 0.2 seconds, 0.4 seconds, 0.8 seconds, 1.0 seconds]")
    }

    @Test func hugeRetryNumbersAndExtremeSettingsSaturateInsteadOfTrapping() {
        let huge = Backoff(base: .seconds(Int64.max), multiplier: 1e300, maximum: .seconds(Int64.max), jitter: .none)
        #expect(huge.ceiling(forRetry: Int.max) == .nanoseconds(Int.max))
        let normal = Backoff(base: .seconds(1), maximum: .seconds(30), jitter: .none)
        #expect(normal.ceiling(forRetry: Int.max) == .seconds(30))
        #expect(normal.ceiling(forRetry: -3) == .seconds(1))
        let odd = Backoff(base: .seconds(-1), multiplier: .nan, maximum: .seconds(-5), jitter: .none)
        #expect(odd.ceiling(forRetry: 10) == .zero)
        let flat = Backoff(base: .seconds(2), multiplier: 0.5, maximum: .seconds(30), jitter: .none)
        #expect(flat.ceiling(forRetry: 50) == .seconds(2))
    }

    @Test func fullJitterDrawsFromZeroToTheCeilingAndIsClamped() {
        let ranges = RangeRecorder()
        let recording = Backoff(base: .seconds(1), maximum: .seconds(60), jitter: .full) { range in
            ranges.record(range)
            return range.upperBound / 4
        }
        #expect(recording.delay(forRetry: 2) == .seconds(1))
        #expect(ranges.recorded == [0...4_000_000_000])
        let wild = Backoff(base: .seconds(1), maximum: .seconds(60), jitter: .full) { _ in Int.max }
        #expect(wild.delay(forRetry: 0) == .seconds(1))
        let negative = Backoff(base: .seconds(1), maximum: .seconds(60), jitter: .full) { _ in -7 }
        #expect(negative.delay(forRetry: 0) == .zero)
        let system = Backoff(base: .seconds(1), maximum: .seconds(60))
        #expect((0..<100).allSatisfy { _ in (Duration.zero...Duration.seconds(8)).contains(system.delay(forRetry: 3)) })
    }

    @Test func hintsAreCappedAndNeverNegative() {
        let backoff = Backoff(base: .seconds(1), maximum: .seconds(10))
        #expect(backoff.cappedHint(.seconds(3)) == .seconds(3))
        #expect(backoff.cappedHint(.seconds(300)) == .seconds(10))
        #expect(backoff.cappedHint(.seconds(-3)) == .zero)
    }
}

/// Records the ranges a random source was asked for.
private final class RangeRecorder: @unchecked Sendable {
    // @unchecked Sendable: `ranges` is only touched inside `lock`.
    private let lock = Lock()
    private var ranges: [ClosedRange<Int>] = []  // Guarded by lock.

    var recorded: [ClosedRange<Int>] { lock.withLock { ranges } }

    func record(_ range: ClosedRange<Int>) {
        lock.withLock { ranges.append(range) }
    }
}
