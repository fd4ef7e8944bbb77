import Dispatch
import Reactive
import TestSupport
import Testing

@Suite(.offPool) struct SubscribeOnTests {
    @Test func subscribingHappensOnTheScheduler() {
        let scheduler = VirtualTimeScheduler()
        let upstream = ManualPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(2))
        upstream.subscribe(on: scheduler).subscribe(subscriber)
        #expect(upstream.subscriptionCount == 0)
        #expect(subscriber.history == [])
        scheduler.advance()
        #expect(upstream.subscriptionCount == 1)
        // The initial request, made from inside receive(subscription:), hopped too: it ran in the same advance.
        #expect(subscriber.history == [.subscription])
        #expect(upstream.subscription?.history == [.requested(.max(2))])
    }

    @Test func requestsAndCancelHopOntoTheScheduler() {
        let scheduler = VirtualTimeScheduler()
        let upstream = ManualPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: nil)
        upstream.subscribe(on: scheduler).subscribe(subscriber)
        scheduler.advance()
        subscriber.request(.max(3))
        #expect(upstream.subscription?.history == [])
        scheduler.advance()
        #expect(upstream.subscription?.history == [.requested(.max(3))])
        subscriber.cancel()
        #expect(upstream.subscription?.history == [.requested(.max(3))])
        scheduler.advance()
        #expect(upstream.subscription?.history == [.requested(.max(3)), .cancelled])
    }

    @Test func valuesAndCompletionPassStraightThrough() {
        let scheduler = VirtualTimeScheduler()
        let upstream = ManualPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never> { _, value in value == 1 ? .max(5) : .none }
        upstream.subscribe(on: scheduler).subscribe(subscriber)
        scheduler.advance()
        #expect(upstream.send(1) == .max(5))
        upstream.send(completion: .finished)
        upstream.send(2)
        #expect(subscriber.history == [.subscription, .value(1), .completion(.finished)])
    }

    @Test func demandReachesASubjectOnlyOnceTheSchedulerRuns() {
        let scheduler = VirtualTimeScheduler()
        let subject = PassthroughSubject<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>()
        subject.subscribe(on: scheduler).subscribe(subscriber)
        subject.send(1)
        #expect(subscriber.history == [])
        scheduler.advance()
        subject.send(2)
        #expect(subscriber.history == [.subscription, .value(2)])
    }

    @Test func chainIsReleasedAfterFinishAndAfterCancel() {
        let scheduler = VirtualTimeScheduler()
        weak var weakSubscription: AnyObject?
        do {
            let upstream = ManualPublisher<Int, Never>()
            let subscriber = TrackingSubscriber<Int, Never>()
            upstream.subscribe(on: scheduler).subscribe(subscriber)
            scheduler.run()
            weakSubscription = subscriber.subscription as AnyObject?
            upstream.send(completion: .finished)
        }
        #expect(weakSubscription == nil)
        do {
            let upstream = ManualPublisher<Int, Never>()
            let subscriber = TrackingSubscriber<Int, Never>()
            upstream.subscribe(on: scheduler).subscribe(subscriber)
            scheduler.run()
            weakSubscription = subscriber.subscription as AnyObject?
            subscriber.cancel()
            scheduler.run()
        }
        #expect(weakSubscription == nil)
    }

    @Test func concurrentRequestsAndCancelReachUpstreamAtMostOnceCancelled() {
        for _ in 0..<20 {
            let scheduler = ConcurrentTestScheduler()
            let upstream = ManualPublisher<Int, Never>()
            let subscriber = OverlapCheckingSubscriber<Int, Never>(initialDemand: .max(1))
            upstream.subscribe(on: scheduler).subscribe(subscriber)
            #expect(scheduler.waitUntilIdle())
            DispatchQueue.concurrentPerform(iterations: 8) { index in
                subscriber.request(.max(1))
                if index == 4 { subscriber.cancel() }
                if index == 6 { subscriber.cancel() }
            }
            #expect(scheduler.waitUntilIdle())
            let history = upstream.subscription?.history ?? []
            #expect(history.filter { $0 == .cancelled }.count == 1)
            #expect(history.count <= 1 + 8 + 1)
        }
    }
}
