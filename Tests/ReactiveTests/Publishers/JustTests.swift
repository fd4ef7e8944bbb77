import Dispatch
import Reactive
import TestSupport
import Testing

@Suite struct JustTests {
    @Test func sendsTheValueOnFirstDemandThenFinishes() {
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: nil)
        Just(42).subscribe(subscriber)
        #expect(subscriber.history == [.subscription])
        subscriber.request(.max(1))
        subscriber.request(.max(1))
        #expect(subscriber.history == [.subscription, .value(42), .completion(.finished)])
    }

    @Test func cancelInsideReceiveSuppressesCompletion() {
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(1)) { subscriber, _ in
            subscriber.cancel()
            return .none
        }
        Just(1).subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .value(1)])
    }

    @Test func cancelBeforeDemandSendsNothing() {
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: nil)
        Just(1).subscribe(subscriber)
        subscriber.subscription?.cancel()
        subscriber.subscription?.request(.unlimited)
        #expect(subscriber.history == [.subscription])
    }

    @Test func eachSubscriberGetsTheValue() {
        let just = Just("a")
        let first = TrackingSubscriber<String, Never>()
        let second = TrackingSubscriber<String, Never>()
        just.subscribe(first)
        just.subscribe(second)
        #expect(first.history == [.subscription, .value("a"), .completion(.finished)])
        #expect(second.history == first.history)
        #expect(just == Just("a"))
        #expect(just.output == "a")
    }

    @Test func subscriptionIsFreedAfterCompletion() {
        weak var weakSubscription: AnyObject?
        weak var weakSubscriber: TrackingSubscriber<Int, Never>?
        do {
            let subscriber = TrackingSubscriber<Int, Never>(initialDemand: nil)
            Just(1).subscribe(subscriber)
            weakSubscription = subscriber.subscription as AnyObject?
            weakSubscriber = subscriber
            subscriber.request(.max(1))
        }
        #expect(weakSubscription == nil)
        #expect(weakSubscriber == nil)
    }

    @Test func requestInsideReceiveDoesNotSendTheValueTwice() {
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(1)) { subscriber, _ in
            subscriber.request(.max(1))
            return .max(1)
        }
        Just(7).subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .value(7), .completion(.finished)])
    }

    @Test func cancelledSubscriptionReleasesTheSubscriberWithoutDemand() {
        weak var weakSubscriber: TrackingSubscriber<Int, Never>?
        let subscription: (any Subscription)?
        do {
            let subscriber = TrackingSubscriber<Int, Never>(initialDemand: nil)
            Just(1).subscribe(subscriber)
            subscription = subscriber.subscription
            weakSubscriber = subscriber
        }
        #expect(weakSubscriber != nil)
        subscription?.cancel()
        #expect(weakSubscriber == nil)
        subscription?.request(.max(1))
    }

    @Test func concurrentRequestsAndCancelDeliverAtMostOnceAndCompleteOnlyIfNotCancelledFirst() {
        for _ in 0..<500 {
            let subscriber = TrackingSubscriber<Int, Never>(initialDemand: nil)
            Just(1).subscribe(subscriber)
            // Subscriptions are safe to call from any thread (the protocol does not say Sendable).
            guard let found = subscriber.subscription else {
                Issue.record("no subscription")
                return
            }
            nonisolated(unsafe) let subscription = found
            DispatchQueue.concurrentPerform(iterations: 3) { thread in
                if thread == 2 { subscription.cancel() } else { subscription.request(.max(1)) }
            }
            let history = subscriber.history
            let allowed: [[TrackingSubscriber<Int, Never>.Event]] = [
                [.subscription],
                [.subscription, .value(1)],
                [.subscription, .value(1), .completion(.finished)],
            ]
            #expect(allowed.contains(history))
        }
    }
}

@Suite struct EmptyAndFailTests {
    private struct Oops: Error, Equatable {}

    @Test func emptyFinishesImmediately() {
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: nil)
        Empty<Int, Never>().subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .completion(.finished)])
    }

    @Test func emptyThatNeverCompletesSendsOnlyTheSubscription() {
        let subscriber = TrackingSubscriber<Int, Never>()
        Empty(completeImmediately: false, outputType: Int.self, failureType: Never.self).subscribe(subscriber)
        #expect(subscriber.history == [.subscription])
        #expect(Empty<Int, Never>() != Empty<Int, Never>(completeImmediately: false))
    }

    @Test func failTerminatesWithTheError() {
        let subscriber = TrackingSubscriber<Int, Oops>(initialDemand: nil)
        Fail(outputType: Int.self, failure: Oops()).subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .completion(.failure(Oops()))])
        #expect(Fail<Int, Oops>(error: Oops()) == Fail(outputType: Int.self, failure: Oops()))
    }
}
