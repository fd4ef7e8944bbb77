import Dispatch
import Reactive
import TestSupport
import Testing

@Suite(.offPool) struct DebounceTests {
    @Test func typingQuicklyThenPausingEmitsOnlyTheLatestValue() {
        let scheduler = VirtualTimeScheduler()
        let subject = PassthroughSubject<String, Never>()
        let subscriber = TimedSubscriber<String, Never>(scheduler: scheduler)
        subject.debounce(for: .milliseconds(500), scheduler: scheduler).subscribe(subscriber)
        for (index, text) in ["S", "Sw", "Swi", "Swift"].enumerated() {
            scheduler.advance(to: at(Double(index) * 0.1))
            subject.send(text)
        }
        scheduler.advance(by: .seconds(2))
        #expect(subscriber.timeline == ["t=0.8:value(Swift)"])
    }

    @Test func marbleQuietPeriodsReleaseTheLatestValue() {
        let scheduler = VirtualTimeScheduler()
        let subject = PassthroughSubject<String, MarbleError>()
        let subscriber = TimedSubscriber<String, MarbleError>(scheduler: scheduler)
        subject.debounce(for: .seconds(2), scheduler: scheduler).subscribe(subscriber)
        Marble.feed("ab-c----de-f------", into: subject, on: scheduler)
        scheduler.run()
        #expect(subscriber.marble == "-----c-------f")
    }

    @Test func completionDropsTheValueStillWaitingAndArrivesOnTheScheduler() {
        let scheduler = VirtualTimeScheduler()
        let subject = PassthroughSubject<String, MarbleError>()
        let subscriber = TimedSubscriber<String, MarbleError>(scheduler: scheduler)
        subject.debounce(for: .seconds(2), scheduler: scheduler).subscribe(subscriber)
        Marble.feed("a---b-|", into: subject, on: scheduler)
        scheduler.run()
        #expect(subscriber.marble == "--a---|")
        #expect(scheduler.pendingActionCount == 0)
    }

    @Test func failureIsPassedOn() {
        let scheduler = VirtualTimeScheduler()
        let subject = PassthroughSubject<String, MarbleError>()
        let subscriber = TimedSubscriber<String, MarbleError>(scheduler: scheduler)
        subject.debounce(for: .seconds(1), scheduler: scheduler).subscribe(subscriber)
        Marble.feed("a-b#", into: subject, on: scheduler)
        scheduler.run()
        #expect(subscriber.marble == "-a-#")
    }

    @Test func asksUpstreamForUnlimitedAndDropsValuesWithoutDemand() {
        let scheduler = VirtualTimeScheduler()
        let upstream = ManualPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(1))
        upstream.debounce(for: .seconds(1), scheduler: scheduler).subscribe(subscriber)
        #expect(upstream.subscription?.history == [.requested(.unlimited)])
        upstream.send(1)
        scheduler.advance(by: .seconds(1))
        upstream.send(2)
        scheduler.advance(by: .seconds(1))
        subscriber.request(.max(1))
        upstream.send(3)
        scheduler.advance(by: .seconds(1))
        #expect(subscriber.history == [.subscription, .value(1), .value(3)])
    }

    @Test func demandReturnedFromReceiveCounts() {
        let scheduler = VirtualTimeScheduler()
        let upstream = ManualPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(1)) { _, _ in .max(1) }
        upstream.debounce(for: .seconds(1), scheduler: scheduler).subscribe(subscriber)
        for value in 1...3 {
            upstream.send(value)
            scheduler.advance(by: .seconds(1))
        }
        #expect(subscriber.values == [1, 2, 3])
    }

    @Test func cancelCancelsTheTimerAndUpstream() {
        let scheduler = VirtualTimeScheduler()
        let upstream = ManualPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>()
        upstream.debounce(for: .seconds(1), scheduler: scheduler).subscribe(subscriber)
        upstream.send(1)
        #expect(scheduler.pendingActionCount == 1)
        subscriber.cancel()
        #expect(scheduler.pendingActionCount == 0)
        scheduler.run()
        #expect(subscriber.history == [.subscription])
        #expect(upstream.subscription?.history == [.requested(.unlimited), .cancelled])
    }

    @Test func reArmingKeepsASingleTimerScheduled() {
        let scheduler = VirtualTimeScheduler()
        let subject = PassthroughSubject<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>()
        subject.debounce(for: .seconds(1), scheduler: scheduler).subscribe(subscriber)
        for value in 0..<100 { subject.send(value) }
        #expect(scheduler.pendingActionCount == 1)
        scheduler.advance(by: .seconds(1))
        #expect(subscriber.values == [99])
        #expect(scheduler.pendingActionCount == 0)
    }

    @Test func chainIsReleasedAfterFinishAndAfterCancel() {
        let scheduler = VirtualTimeScheduler()
        weak var weakSubscription: AnyObject?
        do {
            let subject = PassthroughSubject<Int, Never>()
            let subscriber = TrackingSubscriber<Int, Never>()
            subject.debounce(for: .seconds(1), scheduler: scheduler).subscribe(subscriber)
            weakSubscription = subscriber.subscription as AnyObject?
            subject.send(1)
            subject.send(completion: .finished)
            scheduler.run()
        }
        #expect(weakSubscription == nil)
        do {
            let subject = PassthroughSubject<Int, Never>()
            let subscriber = TrackingSubscriber<Int, Never>()
            subject.debounce(for: .seconds(1), scheduler: scheduler).subscribe(subscriber)
            weakSubscription = subscriber.subscription as AnyObject?
            subject.send(1)
            subscriber.cancel()
        }
        #expect(weakSubscription == nil)
    }

    @Test func concurrentSendsRequestsAndCancelNeverOverlapOrOverDeliver() {
        for _ in 0..<20 {
            let scheduler = ConcurrentTestScheduler()
            let subject = PassthroughSubject<Int, Never>()
            let subscriber = OverlapCheckingSubscriber<Int, Never>(initialDemand: .max(5))
            subject.debounce(for: .seconds(1), scheduler: scheduler).subscribe(subscriber)
            DispatchQueue.concurrentPerform(iterations: 8) { index in
                for value in 0..<30 {
                    subject.send(index * 100 + value)
                    if value % 10 == 0 { subscriber.request(.max(1)) }
                }
                if index == 6 { subscriber.cancel() }
                subject.send(completion: .finished)
            }
            #expect(scheduler.waitUntilIdle())
            #expect(subscriber.received.count <= 5 + 8 * 3)
            #expect(subscriber.completions <= 1)
            #expect(subscriber.overlaps == 0)
        }
    }
}
