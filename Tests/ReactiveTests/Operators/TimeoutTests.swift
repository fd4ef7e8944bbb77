import Dispatch
import Reactive
import TestSupport
import Testing

@Suite(.offPool) struct TimeoutTests {
    @Test func failsWithTheCustomErrorWhenNoValueArrivesInTime() {
        let scheduler = VirtualTimeScheduler()
        let upstream = ManualPublisher<Int, CodedError>()
        let subscriber = TimedSubscriber<Int, CodedError>(scheduler: scheduler)
        upstream.timeout(.seconds(2), scheduler: scheduler) { CodedError(code: 408) }.subscribe(subscriber)
        scheduler.advance(by: .seconds(10))
        #expect(subscriber.timeline == ["t=2:failure(CodedError(408))"])
        #expect(upstream.subscription?.history == [.requested(.unlimited), .cancelled])
        #expect(scheduler.pendingActionCount == 0)
    }

    @Test func finishesWhenThereIsNoCustomError() {
        let scheduler = VirtualTimeScheduler()
        let subject = PassthroughSubject<Int, Never>()
        let subscriber = TimedSubscriber<Int, Never>(scheduler: scheduler)
        subject.timeout(.seconds(2), scheduler: scheduler).subscribe(subscriber)
        scheduler.advance(by: .seconds(10))
        #expect(subscriber.timeline == ["t=2:finished"])
    }

    @Test func everyValueRestartsTheTimer() {
        let scheduler = VirtualTimeScheduler()
        let subject = PassthroughSubject<String, MarbleError>()
        let subscriber = TimedSubscriber<String, MarbleError>(scheduler: scheduler)
        subject.timeout(.seconds(3), scheduler: scheduler, customError: { MarbleError() }).subscribe(subscriber)
        Marble.feed("-a--b-c", into: subject, on: scheduler)
        scheduler.run()
        #expect(subscriber.marble == "-a--b-c--#")
    }

    @Test func upstreamCompletionWinsBeforeTheDeadline() {
        let scheduler = VirtualTimeScheduler()
        let subject = PassthroughSubject<String, MarbleError>()
        let subscriber = TimedSubscriber<String, MarbleError>(scheduler: scheduler)
        subject.timeout(.seconds(3), scheduler: scheduler, customError: { MarbleError() }).subscribe(subscriber)
        Marble.feed("a-|", into: subject, on: scheduler)
        scheduler.run()
        #expect(subscriber.marble == "a-|")
        #expect(scheduler.pendingActionCount == 0)
    }

    @Test func valuesAreDeliveredOnTheSchedulerAndRequestsGoStraightUp() {
        let scheduler = VirtualTimeScheduler()
        let upstream = ManualPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(1)) { _, _ in .max(1) }
        upstream.timeout(.seconds(5), scheduler: scheduler).subscribe(subscriber)
        upstream.send(1)
        #expect(subscriber.history == [.subscription])
        subscriber.request(.max(2))
        #expect(upstream.subscription?.history == [.requested(.max(1)), .requested(.max(2))])
        scheduler.advance()
        #expect(subscriber.history == [.subscription, .value(1)])
        #expect(upstream.subscription?.history == [.requested(.max(1)), .requested(.max(2)), .requested(.max(1))])
    }

    @Test func cancelCancelsTheTimerAndUpstream() {
        let scheduler = VirtualTimeScheduler()
        let upstream = ManualPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>()
        upstream.timeout(.seconds(1), scheduler: scheduler).subscribe(subscriber)
        #expect(scheduler.pendingActionCount == 1)
        subscriber.cancel()
        #expect(scheduler.pendingActionCount == 0)
        scheduler.run()
        #expect(subscriber.history == [.subscription])
        #expect(upstream.subscription?.history == [.requested(.unlimited), .cancelled])
    }

    @Test func chainIsReleasedAfterTimeoutFinishAndCancel() {
        let scheduler = VirtualTimeScheduler()
        weak var weakSubscription: AnyObject?
        do {
            let subject = PassthroughSubject<Int, Never>()
            let subscriber = TrackingSubscriber<Int, Never>()
            subject.timeout(.seconds(1), scheduler: scheduler).subscribe(subscriber)
            weakSubscription = subscriber.subscription as AnyObject?
            scheduler.run()
            #expect(subscriber.history == [.subscription, .completion(.finished)])
        }
        #expect(weakSubscription == nil)
        do {
            let subject = PassthroughSubject<Int, Never>()
            let subscriber = TrackingSubscriber<Int, Never>()
            subject.timeout(.seconds(1), scheduler: scheduler).subscribe(subscriber)
            weakSubscription = subscriber.subscription as AnyObject?
            subject.send(completion: .finished)
            scheduler.run()
        }
        #expect(weakSubscription == nil)
        do {
            let subject = PassthroughSubject<Int, Never>()
            let subscriber = TrackingSubscriber<Int, Never>()
            subject.timeout(.seconds(1), scheduler: scheduler).subscribe(subscriber)
            weakSubscription = subscriber.subscription as AnyObject?
            subscriber.cancel()
        }
        #expect(weakSubscription == nil)
    }

    @Test func concurrentSendsRequestsAndCancelNeverOverlapOrOverDeliver() {
        for _ in 0..<20 {
            let scheduler = ConcurrentTestScheduler()
            let subject = PassthroughSubject<Int, Never>()
            let subscriber = OverlapCheckingSubscriber<Int, Never>(initialDemand: .max(40))
            subject.timeout(.seconds(1), scheduler: scheduler).subscribe(subscriber)
            DispatchQueue.concurrentPerform(iterations: 8) { index in
                for value in 0..<30 {
                    subject.send(index * 100 + value)
                    if value % 10 == 0 { subscriber.request(.max(1)) }
                }
                if index == 6 { subscriber.cancel() }
            }
            #expect(scheduler.waitUntilIdle())
            #expect(subscriber.received.count <= 40 + 8 * 3)
            #expect(subscriber.completions <= 1)
            #expect(subscriber.overlaps == 0)
        }
    }
}
