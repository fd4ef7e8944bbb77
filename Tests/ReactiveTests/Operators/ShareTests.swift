import Dispatch
import Reactive
import Synchronization
import TestSupport
import Testing

private typealias HandPublisher = CombiningTestKit.HandPublisher

@Suite struct ShareTests {
    @Test func twoSubscribersShareOneUpstreamSubscription() {
        let upstream = HandPublisher<Int, Never>()
        let shared = upstream.share()
        let first = TrackingSubscriber<Int, Never>()
        let second = TrackingSubscriber<Int, Never>()
        shared.subscribe(first)
        shared.subscribe(second)
        upstream.send(1)
        upstream.send(completion: .finished)
        #expect(upstream.subscriptions.count == 1)
        #expect(first.history == [.subscription, .value(1), .completion(.finished)])
        #expect(second.history == first.history)
    }

    @Test func aDeferredUpstreamRunsOnceForAllSubscribers() {
        let runs = Atomic<Int>(0)
        let subject = PassthroughSubject<Int, Never>()
        let shared = Deferred { () -> PassthroughSubject<Int, Never> in
            runs.add(1, ordering: .relaxed)
            return subject
        }.share()
        let first = TrackingSubscriber<Int, Never>()
        let second = TrackingSubscriber<Int, Never>()
        shared.subscribe(first)
        shared.subscribe(second)
        subject.send(1)
        #expect(runs.load(ordering: .relaxed) == 1)
        #expect(first.values == [1])
        #expect(second.values == [1])
    }

    @Test func aLateSubscriberSeesOnlyLaterValues() {
        let upstream = PassthroughSubject<Int, Never>()
        let shared = upstream.share()
        let early = TrackingSubscriber<Int, Never>()
        let late = TrackingSubscriber<Int, Never>()
        shared.subscribe(early)
        upstream.send(1)
        shared.subscribe(late)
        upstream.send(2)
        #expect(early.values == [1, 2])
        #expect(late.values == [2])
    }

    @Test func theLastSubscriberLeavingCancelsTheUpstreamAndANewOneReconnects() {
        let upstream = HandPublisher<Int, Never>()
        let shared = upstream.share()
        let first = TrackingSubscriber<Int, Never>()
        let second = TrackingSubscriber<Int, Never>()
        shared.subscribe(first)
        shared.subscribe(second)
        first.cancel()
        #expect(upstream.subscription?.isCancelled == false)
        second.cancel()
        #expect(upstream.subscription?.history == [.requested(.unlimited), .cancelled])
        let third = TrackingSubscriber<Int, Never>()
        shared.subscribe(third)
        #expect(upstream.subscriptions.count == 2)
        upstream.send(3)
        #expect(third.values == [3])
        #expect(first.values.isEmpty)
    }

    @Test func sharesASynchronousPublisherWithItsFirstSubscriber() {
        let shared = [1, 2].publisher.share()
        let first = TrackingSubscriber<Int, Never>()
        shared.subscribe(first)
        #expect(first.history == [.subscription, .value(1), .value(2), .completion(.finished)])
        let late = TrackingSubscriber<Int, Never>()
        shared.subscribe(late)
        #expect(late.history == [.subscription, .completion(.finished)])
    }

    @Test func sharesAreEqualOnlyToThemselves() {
        let upstream = Just(1)
        let shared = upstream.share()
        #expect(shared == shared)
        #expect(shared != upstream.share())
    }

    @Test func concurrentSubscribersAndCancelsLeaveNothingConnected() {
        let upstream = HandPublisher<Int, Never>()
        let shared = upstream.share()
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<100 {
                let subscriber = TrackingSubscriber<Int, Never>()
                shared.subscribe(subscriber)
                subscriber.cancel()
            }
        }
        let subscriptions = upstream.subscriptions
        #expect(!subscriptions.isEmpty)
        #expect(subscriptions.allSatisfy { $0.isCancelled })
    }

    @Test func releasesEverythingWhenTheLastSubscriberLeaves() {
        weak var weakShare: Publishers.Share<PassthroughSubject<Int, Never>>?
        weak var weakSubscriber: TrackingSubscriber<Int, Never>?
        let upstream = PassthroughSubject<Int, Never>()
        do {
            let shared = upstream.share()
            weakShare = shared
            let subscriber = TrackingSubscriber<Int, Never>()
            weakSubscriber = subscriber
            shared.subscribe(subscriber)
            upstream.send(1)
            subscriber.cancel()
        }
        #expect(weakShare == nil)
        #expect(weakSubscriber == nil)
    }
}
