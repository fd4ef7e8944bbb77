import Reactive
import TestSupport
import Testing

/// The behaviours of issue 27 where Reactive used to differ from Combine — demand, ordering and
/// re-entrancy, scheduler use, and events after the end — each written from Combine's documented
/// behaviour or, where the documentation is silent, from what Combine does. docs/REACTIVE.md lists
/// the choices made where Combine traps or where its documentation leaves the behaviour open.
@Suite struct CombineBehaviourTests {
    /// A subscriber that logs, in order, its events and the requests it makes from inside them.
    ///
    /// **Thread safety:** the tests drive it from one thread.
    final class OrderLog: Subscriber, @unchecked Sendable {
        // @unchecked Sendable: the tests call it from one thread.
        typealias Input = Int
        typealias Failure = Never

        private(set) var log: [String] = []
        let demand: Subscribers.Demand

        init(requesting demand: Subscribers.Demand) {
            self.demand = demand
        }

        func receive(subscription: any Subscription) {
            log.append("subscription")
            subscription.request(demand)
            log.append("requested")
        }

        func receive(_ input: Int) -> Subscribers.Demand {
            log.append("value \(input)")
            return .none
        }

        func receive(completion: Subscribers.Completion<Never>) {
            log.append("\(completion)")
        }
    }

    /// A publisher that fails (or, after `failures` attempts, finishes) inside `subscribe`, as `Fail`
    /// does, and records how deeply its `subscribe` calls nest. With `failsBeforeSubscription`, every
    /// failing attempt after the first fails before it hands out its subscription (a misbehaving
    /// upstream).
    ///
    /// **Thread safety:** the tests drive it from one thread.
    final class NestingProbe: Publisher, @unchecked Sendable {
        // @unchecked Sendable: the tests call it from one thread.
        typealias Output = Int
        typealias Failure = OperatorError

        let failures: Int
        let failsBeforeSubscription: Bool
        private(set) var subscribeCount = 0
        private(set) var deepest = 0
        private var depth = 0

        init(failures: Int, failsBeforeSubscription: Bool = false) {
            self.failures = failures
            self.failsBeforeSubscription = failsBeforeSubscription
        }

        func receive<S: Subscriber>(subscriber: S) where S.Input == Int, S.Failure == OperatorError {
            depth += 1
            deepest = Swift.max(deepest, depth)
            subscribeCount += 1
            let fails = subscribeCount <= failures
            if fails, failsBeforeSubscription, subscribeCount > 1 {
                subscriber.receive(completion: .failure(OperatorError(code: subscribeCount)))
                subscriber.receive(subscription: Subscriptions.empty)
            } else {
                subscriber.receive(subscription: Subscriptions.empty)
                subscriber.receive(completion: fails ? .failure(OperatorError(code: subscribeCount)) : .finished)
            }
            depth -= 1
        }
    }

    /// A publisher whose second subscription makes the first attempt fail again, re-entrantly, before
    /// the second attempt has its subscription (a misbehaving upstream); the first attempt fails as
    /// it is subscribed.
    ///
    /// **Thread safety:** the tests drive it from one thread.
    final class StaleFailureProbe: Publisher, @unchecked Sendable {
        // @unchecked Sendable: the tests call it from one thread.
        typealias Output = Int
        typealias Failure = OperatorError

        private(set) var subscribers: [AnySubscriber<Int, OperatorError>] = []

        func receive<S: Subscriber>(subscriber: S) where S.Input == Int, S.Failure == OperatorError {
            let current = AnySubscriber(subscriber)
            subscribers.append(current)
            if subscribers.count == 2 {
                subscribers[0].receive(completion: .failure(OperatorError(code: 99)))
            }
            current.receive(subscription: Subscriptions.empty)
            if subscribers.count == 1 {
                current.receive(completion: .failure(OperatorError(code: 1)))
            }
        }
    }

    // MARK: Demand

    /// Combine passes `request(.none)` upstream through these operators (upstream decides what it
    /// means) instead of dropping it.
    @Test func aDemandOfZeroGoesUpstream() {
        let scheduler = VirtualTimeScheduler()
        func check<P: Publisher>(_ name: String, _ make: (DrivenPublisher<Int, Never>) -> P)
        where P.Output == Int, P.Failure == Never {
            let upstream = DrivenPublisher<Int, Never>()
            let subscriber = TrackingSubscriber<Int, Never>(initialDemand: nil)
            make(upstream).subscribe(subscriber)
            scheduler.advance()  // subscribe(on:) subscribes on the scheduler
            subscriber.request(.none)
            scheduler.advance()  // and requests on it
            #expect(upstream.subscription.history == [.requested(.none)], "\(name)")
            subscriber.cancel()
            scheduler.advance()
        }
        check("receive(on:)") { $0.receive(on: scheduler) }
        check("subscribe(on:)") { $0.subscribe(on: scheduler) }
        check("delay") { $0.delay(for: .seconds(1), scheduler: scheduler) }
        check("timeout") { $0.timeout(.seconds(1), scheduler: scheduler) }
        check("handleEvents") { $0.handleEvents() }
    }

    /// Combine reports to `receiveRequest` the demand downstream returns from `receive(_:)` too,
    /// when it is more than zero.
    @Test func handleEventsReportsTheDemandReturnedFromReceive() {
        let upstream = DrivenPublisher<Int, Never>()
        var requests: [Subscribers.Demand] = []
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(1)) { _, value in
            value == 1 ? .max(2) : .none
        }
        upstream.handleEvents(receiveRequest: { requests.append($0) }).subscribe(subscriber)
        #expect(upstream.send(1) == .max(2))
        #expect(upstream.send(2) == .none)
        #expect(requests == [.max(1), .max(2)])
    }

    /// Combine asks every child it asked one value at a time for `.unlimited` once downstream's
    /// demand becomes `.unlimited`; the children then send without asking again.
    @Test func flatMapAsksItsChildrenForUnlimitedOnceDownstreamDoes() {
        let outer = DrivenPublisher<Int, Never>()
        let children = [DrivenPublisher<Int, Never>(), DrivenPublisher<Int, Never>()]
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(1))
        outer.flatMap { children[$0] }.subscribe(subscriber)
        outer.send(0)
        outer.send(1)
        #expect(children[0].send(10) == .max(1))
        #expect(children[1].send(20) == .none)  // no demand: it waits in the queue
        subscriber.request(.unlimited)
        #expect(subscriber.values == [10, 20])
        #expect(children[0].subscription.history == [.requested(.max(1)), .requested(.unlimited)])
        #expect(children[1].subscription.history == [.requested(.max(1)), .requested(.unlimited)])
        #expect(children[0].send(11) == .none)
        #expect(children[1].send(21) == .none)
        #expect(subscriber.values == [10, 20, 11, 21])
    }

    // MARK: Ordering and re-entrancy

    /// Combine delivers the current value inside a request made from `receive(subscription:)`,
    /// before that request returns.
    @Test func currentValueSubjectDeliversItsValueInsideARequestMadeOnSubscription() {
        let subject = CurrentValueSubject<Int, Never>(1)
        let subscriber = OrderLog(requesting: .max(1))
        subject.subscribe(subscriber)
        #expect(subscriber.log == ["subscription", "value 1", "requested"])
        subject.send(2)  // no demand left
        subject.send(completion: .finished)
        #expect(subscriber.log == ["subscription", "value 1", "requested", "finished"])

        let unlimited = OrderLog(requesting: .unlimited)
        let other = CurrentValueSubject<Int, Never>(5)
        other.subscribe(unlimited)
        other.send(6)
        #expect(unlimited.log == ["subscription", "value 5", "requested", "value 6"])
    }

    /// Combine subscribes to the trigger first, so a trigger that fires before upstream's
    /// subscription arrives ends the stream: upstream is cancelled as soon as it subscribes.
    @Test func prefixUntilOutputHonoursATriggerThatFiresBeforeUpstreamSubscribes() {
        let scheduler = VirtualTimeScheduler()
        let numbers = DrivenPublisher<Int, Never>()
        let stop = PassthroughSubject<Void, Never>()
        let subscriber = TrackingSubscriber<Int, Never>()
        numbers.subscribe(on: scheduler).prefix(untilOutputFrom: stop).subscribe(subscriber)
        stop.send(())  // upstream subscribes only when the scheduler runs
        scheduler.run()
        #expect(subscriber.history == [.subscription, .completion(.finished)])
        #expect(numbers.subscription.isCancelled)
        numbers.send(1)
        #expect(subscriber.values == [])
    }

    /// Combine ignores what the trigger sends after it completed (a misbehaving trigger).
    @Test func prefixUntilOutputIgnoresATriggerValueAfterTheTriggerFinished() {
        let numbers = DrivenPublisher<Int, Never>()
        let stop = ManualPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>()
        numbers.prefix(untilOutputFrom: stop).subscribe(subscriber)
        numbers.send(1)
        stop.send(completion: .finished)
        stop.send(0)
        numbers.send(2)
        #expect(subscriber.history == [.subscription, .value(1), .value(2)])
        #expect(!numbers.subscription.isCancelled)
    }

    /// Combine counts a child from the moment it subscribes to it: an upstream that finishes from
    /// inside that `subscribe` (re-entrantly) does not end the stream before the child.
    @Test func flatMapKeepsAChildThatIsStillSubscribingWhenUpstreamFinishesReentrantly() {
        let outer = DrivenPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>()
        outer.flatMap { value in
            Deferred {
                outer.send(completion: .finished)
                return Just(value)
            }
        }
        .subscribe(subscriber)
        outer.send(7)
        #expect(subscriber.history == [.subscription, .value(7), .completion(.finished)])

        // Nested: the first child's subscribe makes upstream send a second value, whose child's
        // subscribe makes upstream finish; both children still count.
        let nestingOuter = DrivenPublisher<Int, Never>()
        let nested = TrackingSubscriber<Int, Never>()
        nestingOuter.flatMap { value in
            Deferred {
                if value == 1 {
                    nestingOuter.send(2)
                } else {
                    nestingOuter.send(completion: .finished)
                }
                return Just(value)
            }
        }
        .subscribe(nested)
        nestingOuter.send(1)
        #expect(nested.history == [.subscription, .value(2), .value(1), .completion(.finished)])
    }

    /// Combine resubscribes after the failed attempt's `subscribe` returned, from a loop: an upstream
    /// that fails inside `subscribe` (as `Fail` does) is retried without the calls nesting deeper.
    @Test func retryResubscribesFromALoopWhenAttemptsFailWhileSubscribing() {
        let upstream = NestingProbe(failures: 5)
        let subscriber = TrackingSubscriber<Int, OperatorError>()
        upstream.retry(10).subscribe(subscriber)
        #expect(upstream.subscribeCount == 6)
        #expect(upstream.deepest == 2)
        #expect(subscriber.history == [.subscription, .completion(.finished)])

        let exhausted = NestingProbe(failures: 5)
        let failed = TrackingSubscriber<Int, OperatorError>()
        exhausted.retry(3).subscribe(failed)
        #expect(exhausted.subscribeCount == 4)
        #expect(exhausted.deepest == 2)
        #expect(failed.history == [.subscription, .completion(.failure(OperatorError(code: 4)))])
    }

    /// Combine's `retry` does not wait for an attempt's subscription: an attempt that fails before
    /// handing out its subscription (a misbehaving upstream) is retried like any other, and its late
    /// subscription is cancelled.
    @Test func retryRetriesAnAttemptThatFailsBeforeItsSubscription() {
        let upstream = NestingProbe(failures: 3, failsBeforeSubscription: true)
        let subscriber = TrackingSubscriber<Int, OperatorError>()
        upstream.retry(5).subscribe(subscriber)
        #expect(upstream.subscribeCount == 4)
        #expect(subscriber.history == [.subscription, .completion(.finished)])

        let exhausted = NestingProbe(failures: 3, failsBeforeSubscription: true)
        let failed = TrackingSubscriber<Int, OperatorError>()
        exhausted.retry(1).subscribe(failed)
        #expect(exhausted.subscribeCount == 2)
        #expect(failed.history == [.subscription, .completion(.failure(OperatorError(code: 2)))])
    }

    /// A second failure of an attempt already retried, arriving while the next one is being
    /// subscribed, does not end the stream: the attempt in progress carries on.
    @Test func retryIgnoresARepeatedFailureOfTheAttemptItAlreadyRetried() {
        let upstream = StaleFailureProbe()
        let subscriber = TrackingSubscriber<Int, OperatorError>()
        upstream.retry(3).subscribe(subscriber)
        #expect(upstream.subscribers.count == 2)
        _ = upstream.subscribers[1].receive(5)
        #expect(subscriber.history == [.subscription, .value(5)])
    }

    /// With `retry(-1)`, an upstream that keeps failing while subscribing is retried, from the loop,
    /// for as long as it fails.
    @Test func retryWithANegativeCountKeepsRetryingAnUpstreamThatFailsWhileSubscribing() {
        let upstream = NestingProbe(failures: 1000)
        let subscriber = TrackingSubscriber<Int, OperatorError>()
        upstream.retry(-1).subscribe(subscriber)
        #expect(upstream.subscribeCount == 1001)
        #expect(upstream.deepest == 2)
        #expect(subscriber.history == [.subscription, .completion(.finished)])
    }

    // MARK: Schedulers

    /// Combine drops a value that arrives without downstream demand and schedules nothing for it.
    @Test func throttleSchedulesNothingForAValueWithoutDemand() {
        let scheduler = SchedulerCallPatternTests.RecordingScheduler()
        let subject = PassthroughSubject<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: nil)
        subject.throttle(for: .seconds(1), scheduler: scheduler, latest: true).subscribe(subscriber)
        _ = scheduler.takeCalls()
        subject.send(1)
        #expect(scheduler.takeCalls() == ["now"])
        subscriber.request(.max(1))
        _ = scheduler.base.run()
        #expect(subscriber.values == [])
        subject.send(2)
        #expect(scheduler.takeCalls() == ["now", "schedule(options: nil)"])
        _ = scheduler.base.run()
        #expect(subscriber.values == [2])
    }

    /// Combine takes the demand when it schedules the emission: a value replaces the pending one
    /// only while downstream has demand left.
    @Test func throttleReplacesThePendingValueOnlyWhileThereIsDemand() {
        let scheduler = VirtualTimeScheduler()
        let subject = PassthroughSubject<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(1))
        subject.throttle(for: .seconds(1), scheduler: scheduler, latest: true).subscribe(subscriber)
        subject.send(1)
        subject.send(2)  // the emission took the only demand: dropped
        scheduler.run()
        #expect(subscriber.values == [1])
    }

    /// Combine starts the timer before downstream has the subscription; on an immediate scheduler it
    /// runs out at once. Downstream still gets its subscription first, then the completion.
    @Test func timeoutOnAnImmediateSchedulerHandsOverTheSubscriptionBeforeFinishing() {
        let upstream = DrivenPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>()
        upstream.timeout(.seconds(1), scheduler: ImmediateScheduler.shared).subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .completion(.finished)])
        #expect(upstream.subscription.isCancelled)
    }

    /// Reactive's choice (docs/REACTIVE.md): nothing reaches a subscriber after it cancelled, not even
    /// a completion already queued for the scheduler. Combine's documentation asks `cancel()` to stop
    /// delivery and leaves only *when* open; every scheduled operator does the same here.
    @Test func aCompletionScheduledBeforeCancelIsNotDelivered() {
        let scheduler = VirtualTimeScheduler()
        func check<P: Publisher>(_ name: String, _ make: (DrivenPublisher<Int, Never>) -> P)
        where P.Output == Int, P.Failure == Never {
            let upstream = DrivenPublisher<Int, Never>()
            let subscriber = TrackingSubscriber<Int, Never>()
            make(upstream).subscribe(subscriber)
            scheduler.advance()
            upstream.send(1)
            scheduler.advance(by: .seconds(1))  // delivers the value (delay: after its interval)
            #expect(subscriber.values == [1], "\(name)")
            upstream.send(completion: .finished)  // queued for the scheduler (debounce: at once)
            subscriber.cancel()
            scheduler.advance(by: .seconds(2))
            #expect(subscriber.history == [.subscription, .value(1)], "\(name)")
        }
        check("receive(on:)") { $0.receive(on: scheduler) }
        check("delay") { $0.delay(for: .seconds(1), scheduler: scheduler) }
        check("debounce") { $0.debounce(for: .seconds(1), scheduler: scheduler) }
        check("timeout") { $0.timeout(.seconds(5), scheduler: scheduler) }

        // subscribe(on:) delivers on upstream's thread, but its cancel waits for the scheduler: a
        // completion upstream sends meanwhile is not delivered either.
        let upstream = DrivenPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>()
        upstream.subscribe(on: scheduler).subscribe(subscriber)
        scheduler.advance()
        subscriber.cancel()
        #expect(!upstream.subscription.isCancelled)
        upstream.send(completion: .finished)
        scheduler.advance()
        #expect(subscriber.history == [.subscription])
    }

    // MARK: After termination

    /// Combine ignores a value that arrives after upstream's failure (a misbehaving upstream): the
    /// pending emission still carries the value it held, then the failure.
    @Test func throttleIgnoresAValueAfterTheFailure() {
        let scheduler = VirtualTimeScheduler()
        let upstream = ManualPublisher<Int, OperatorError>()
        let subscriber = TrackingSubscriber<Int, OperatorError>()
        upstream.throttle(for: .seconds(3), scheduler: scheduler, latest: true).subscribe(subscriber)
        upstream.send(1)
        scheduler.advance(by: .seconds(1))
        upstream.send(2)  // pending until t=3
        upstream.send(completion: .failure(OperatorError(code: 9)))
        upstream.send(3)
        scheduler.run()
        #expect(
            subscriber.history == [
                .subscription, .value(1), .value(2), .completion(.failure(OperatorError(code: 9))),
            ]
        )
    }

    /// Combine neither transforms nor subscribes to a value that arrives after upstream failed (a
    /// misbehaving upstream).
    @Test func flatMapIgnoresAValueAfterUpstreamFailed() {
        let outer = ManualPublisher<Int, OperatorError>()
        var transformed: [Int] = []
        let child = DrivenPublisher<Int, OperatorError>()
        let subscriber = TrackingSubscriber<Int, OperatorError>()
        outer.flatMap { value -> DrivenPublisher<Int, OperatorError> in
            transformed.append(value)
            return child
        }
        .subscribe(subscriber)
        outer.send(completion: .failure(OperatorError(code: 3)))
        outer.send(1)
        #expect(transformed == [])
        #expect(child.subscribeCount == 0)
        #expect(subscriber.history == [.subscription, .completion(.failure(OperatorError(code: 3)))])
    }
}
