import Dispatch
import Reactive
import TestSupport
import Testing

@Suite(.offPool) struct DelayTests {
    @Test func everyEventIsShiftedByTheInterval() {
        let scheduler = VirtualTimeScheduler()
        let subject = PassthroughSubject<String, MarbleError>()
        let subscriber = TimedSubscriber<String, MarbleError>(scheduler: scheduler)
        subject.delay(for: .seconds(2), scheduler: scheduler).subscribe(subscriber)
        Marble.feed("-a-b---c|", into: subject, on: scheduler)
        scheduler.run()
        #expect(subscriber.marble == "---a-b---c|")
    }

    @Test func failureIsDelayedToo() {
        let scheduler = VirtualTimeScheduler()
        let subject = PassthroughSubject<String, MarbleError>()
        let subscriber = TimedSubscriber<String, MarbleError>(scheduler: scheduler)
        subject.delay(for: .seconds(1), scheduler: scheduler).subscribe(subscriber)
        Marble.feed("a#", into: subject, on: scheduler)
        scheduler.run()
        #expect(subscriber.marble == "-a#")
    }

    @Test func nothingArrivesBeforeTheIntervalHasPassed() {
        let scheduler = VirtualTimeScheduler()
        let subject = PassthroughSubject<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>()
        subject.delay(for: .milliseconds(500), scheduler: scheduler).subscribe(subscriber)
        subject.send(1)
        scheduler.advance(by: .milliseconds(499))
        #expect(subscriber.history == [.subscription])
        scheduler.advance(by: .milliseconds(1))
        #expect(subscriber.history == [.subscription, .value(1)])
    }

    @Test func requestsGoUpstreamDirectlyAndDemandIsRespected() {
        let scheduler = VirtualTimeScheduler()
        let subject = PassthroughSubject<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(1))
        subject.delay(for: .seconds(1), scheduler: scheduler).subscribe(subscriber)
        subject.send(1)
        subject.send(2)
        subscriber.request(.max(1))
        subject.send(3)
        scheduler.advance(by: .seconds(1))
        #expect(subscriber.history == [.subscription, .value(1), .value(3)])
    }

    @Test func cancelDropsPendingDelayedEventsAndCancelsUpstream() {
        let scheduler = VirtualTimeScheduler()
        let upstream = ManualPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>()
        upstream.delay(for: .seconds(1), scheduler: scheduler).subscribe(subscriber)
        upstream.send(1)
        subscriber.cancel()
        scheduler.run()
        #expect(subscriber.history == [.subscription])
        #expect(upstream.subscription?.history == [.requested(.unlimited), .cancelled])
    }

    @Test func chainIsReleasedAfterFinishAndAfterCancel() {
        let scheduler = VirtualTimeScheduler()
        weak var weakSubscription: AnyObject?
        do {
            let subject = PassthroughSubject<Int, Never>()
            let subscriber = TrackingSubscriber<Int, Never>()
            subject.delay(for: .seconds(1), scheduler: scheduler).subscribe(subscriber)
            weakSubscription = subscriber.subscription as AnyObject?
            subject.send(completion: .finished)
            scheduler.run()
            #expect(subscriber.history == [.subscription, .completion(.finished)])
        }
        #expect(weakSubscription == nil)
        do {
            let subject = PassthroughSubject<Int, Never>()
            let subscriber = TrackingSubscriber<Int, Never>()
            subject.delay(for: .seconds(1), scheduler: scheduler).subscribe(subscriber)
            weakSubscription = subscriber.subscription as AnyObject?
            subject.send(1)
            subscriber.cancel()
            scheduler.run()
        }
        #expect(weakSubscription == nil)
    }

    @Test func concurrentSendsAndCancelNeverOverlap() {
        for _ in 0..<20 {
            let scheduler = ConcurrentTestScheduler()
            let subject = PassthroughSubject<Int, Never>()
            let subscriber = OverlapCheckingSubscriber<Int, Never>(initialDemand: .max(100))
            subject.delay(for: .seconds(1), scheduler: scheduler).subscribe(subscriber)
            DispatchQueue.concurrentPerform(iterations: 8) { index in
                for value in 0..<30 { subject.send(index * 100 + value) }
                if index == 3 { subscriber.cancel() }
                subject.send(completion: .finished)
            }
            #expect(scheduler.waitUntilIdle())
            #expect(subscriber.received.count <= 100)
            #expect(subscriber.completions <= 1)
            #expect(subscriber.overlaps == 0)
        }
    }
}
