import Dispatch
import Reactive
import Synchronization
import TestSupport
import Testing

@Suite(.offPool) struct FutureTests {
    private struct Oops: Error, Equatable {}

    @Test func closureRunsOnceEagerlyAndResultIsReplayedToLateSubscribers() {
        let runs = LockedValue(0)
        let promiseBox = LockedValue<Future<Int, Never>.Promise?>(nil)
        let future = Future<Int, Never> { promise in
            runs.withLock { $0 += 1 }
            promiseBox.withLock { $0 = promise }
        }
        #expect(runs.withLock { $0 } == 1)
        let early = TrackingSubscriber<Int, Never>()
        future.subscribe(early)
        #expect(early.history == [.subscription])
        promiseBox.withLock { $0 }?(.success(7))
        promiseBox.withLock { $0 }?(.success(8))
        let late = TrackingSubscriber<Int, Never>()
        future.subscribe(late)
        #expect(runs.withLock { $0 } == 1)
        #expect(early.history == [.subscription, .value(7), .completion(.finished)])
        #expect(late.history == [.subscription, .value(7), .completion(.finished)])
    }

    @Test func eachSubscriberDemandIsRespected() {
        let future = Future<Int, Never> { $0(.success(1)) }
        let waiting = TrackingSubscriber<Int, Never>(initialDemand: nil)
        future.subscribe(waiting)
        #expect(waiting.history == [.subscription])
        waiting.request(.max(3))
        #expect(waiting.history == [.subscription, .value(1), .completion(.finished)])
    }

    @Test func failureIsDeliveredWithoutDemand() {
        let future = Future<Int, Oops> { $0(.failure(Oops())) }
        let subscriber = TrackingSubscriber<Int, Oops>(initialDemand: nil)
        future.subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .completion(.failure(Oops()))])
    }

    @Test func fulfilledFromAnotherThread() {
        let future = Future<Int, Never> { promise in
            DispatchQueue.global().async { promise(.success(99)) }
        }
        let done = TestSignal()
        let subscriber = TrackingSubscriber<Int, Never>(onCompletion: { _ in done.signal() })
        future.subscribe(subscriber)
        #expect(done.wait(timeout: .seconds(10)))
        #expect(subscriber.history == [.subscription, .value(99), .completion(.finished)])
    }

    @Test func cancelBeforeFulfilmentDeliversNothingAndFreesTheSubscription() {
        let promiseBox = LockedValue<Future<Int, Never>.Promise?>(nil)
        let future = Future<Int, Never> { promise in promiseBox.withLock { $0 = promise } }
        weak var weakSubscriber: TrackingSubscriber<Int, Never>?
        let subscriber = TrackingSubscriber<Int, Never>()
        future.subscribe(subscriber)
        weakSubscriber = subscriber
        subscriber.cancel()
        promiseBox.withLock { $0 }?(.success(1))
        #expect(subscriber.history == [.subscription])
        _ = consume subscriber
        #expect(weakSubscriber == nil)
    }

    @Test func cancelInsideReceiveSuppressesCompletion() {
        let future = Future<Int, Never> { $0(.success(1)) }
        let subscriber = TrackingSubscriber<Int, Never> { subscriber, _ in
            subscriber.cancel()
            return .none
        }
        future.subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .value(1)])
    }

    @Test func futureIsFreedOnceFulfilledAndUnobserved() {
        weak var weakFuture: Future<Int, Never>?
        do {
            let future = Future<Int, Never> { $0(.success(1)) }
            weakFuture = future
            let subscriber = TrackingSubscriber<Int, Never>()
            future.subscribe(subscriber)
        }
        #expect(weakFuture == nil)
    }

    @Test func concurrentFulfilmentAndSubscriptionDeliverExactlyOnce() {
        for _ in 0..<50 {
            let promiseBox = LockedValue<Future<Int, Never>.Promise?>(nil)
            let future = Future<Int, Never> { promise in promiseBox.withLock { $0 = promise } }
            let subscribers = (0..<8).map { _ in SerialCheckingSubscriber(initialDemand: .max(1)) }
            DispatchQueue.concurrentPerform(iterations: 9) { index in
                if index == 8 {
                    promiseBox.withLock { $0 }?(.success(index))
                } else {
                    future.subscribe(subscribers[index])
                }
            }
            for subscriber in subscribers {
                #expect(subscriber.report == .init(values: 1, completions: 1, overlaps: 0))
            }
        }
    }
}

@Suite(.offPool) struct DeferredTests {
    @Test func createsAPublisherPerSubscription() {
        let created = LockedValue(0)
        let deferred = Deferred { () -> Just<Int> in
            let count = created.withLock { count in
                count += 1
                return count
            }
            return Just(count)
        }
        #expect(created.withLock { $0 } == 0)
        let first = TrackingSubscriber<Int, Never>()
        let second = TrackingSubscriber<Int, Never>()
        deferred.subscribe(first)
        deferred.subscribe(second)
        #expect(first.history == [.subscription, .value(1), .completion(.finished)])
        #expect(second.history == [.subscription, .value(2), .completion(.finished)])
    }

    @Test func deferredFutureRunsOnlyWhenSubscribed() {
        let runs = LockedValue(0)
        let deferred = Deferred {
            Future<Int, Never> { promise in
                runs.withLock { $0 += 1 }
                promise(.success(5))
            }
        }
        #expect(runs.withLock { $0 } == 0)
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(1))
        deferred.subscribe(subscriber)
        #expect(runs.withLock { $0 } == 1)
        #expect(subscriber.values == [5])
    }
}
