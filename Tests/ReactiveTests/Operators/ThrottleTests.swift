import Dispatch
import Reactive
import TestSupport
import Testing

@Suite(.offPool) struct ThrottleTests {
    private func throttled(_ marble: String, interval: Int, latest: Bool) -> String {
        let scheduler = VirtualTimeScheduler()
        let subject = PassthroughSubject<String, MarbleError>()
        let subscriber = TimedSubscriber<String, MarbleError>(scheduler: scheduler)
        subject.throttle(for: .seconds(interval), scheduler: scheduler, latest: latest).subscribe(subscriber)
        Marble.feed(marble, into: subject, on: scheduler)
        scheduler.run()
        return subscriber.marble
    }

    @Test func latestEmitsTheFirstValueAtOnceThenTheMostRecentPerWindow() {
        #expect(throttled("abc-d----e|", interval: 3, latest: true) == "a--c--d--e|")
    }

    @Test func firstEmitsTheFirstValueAtOnceThenTheFirstOfEachWindow() {
        #expect(throttled("abc-d----e|", interval: 3, latest: false) == "a--b--d--e|")
    }

    @Test func aQuietWindowLetsTheNextValueThroughAtOnce() {
        #expect(throttled("a-----b-----c", interval: 2, latest: true) == "a-----b-----c")
    }

    /// Combine: a completion that arrives while an emission is pending goes out with it, after its
    /// value, at the emission's instant (not at once).
    @Test func completionWaitsForThePendingEmissionAndFollowsItsValue() {
        #expect(throttled("ab|", interval: 3, latest: true) == "a--(b|)")
        #expect(throttled("abc|", interval: 3, latest: false) == "a--(b|)")
        #expect(throttled("a|", interval: 3, latest: true) == "a|")
        #expect(throttled("a---|", interval: 3, latest: true) == "a---|")
    }

    @Test func failureWaitsForThePendingEmissionAndFollowsItsValue() {
        #expect(throttled("ab#", interval: 3, latest: true) == "a--(b#)")
    }

    /// Combine: values that arrive while the first emission is still pending replace it (`latest`) or
    /// are dropped (first): a burst before the scheduler runs yields one value, not two.
    @Test(arguments: [(true, ["t=0:value(3)"]), (false, ["t=0:value(1)"])])
    func burstBeforeTheFirstEmissionYieldsOneValue(latest: Bool, expected: [String]) {
        let scheduler = VirtualTimeScheduler()
        let subject = PassthroughSubject<Int, Never>()
        let subscriber = TimedSubscriber<Int, Never>(scheduler: scheduler)
        subject.throttle(for: .seconds(1), scheduler: scheduler, latest: latest).subscribe(subscriber)
        [1, 2, 3].forEach(subject.send)
        scheduler.advance(by: .seconds(5))
        #expect(subscriber.timeline == expected)
    }

    /// The next interval is measured from the last emission (the scheduler's `now` when it ran), not
    /// on a fixed grid from the first value nor from the arrival of the value that is throttled.
    @Test func theNextIntervalIsMeasuredFromTheLastEmission() {
        let scheduler = VirtualTimeScheduler()
        let subject = PassthroughSubject<Int, Never>()
        let subscriber = TimedSubscriber<Int, Never>(scheduler: scheduler)
        subject.throttle(for: .seconds(2), scheduler: scheduler, latest: true).subscribe(subscriber)
        subject.send(1)
        scheduler.advance(by: .seconds(3))
        subject.send(2)  // t=3: quiet for longer than the interval, out at once
        scheduler.advance(by: .seconds(1))
        subject.send(3)  // t=4: within 2 s of the emission at t=3, so out at t=5
        scheduler.advance(by: .seconds(5))
        #expect(subscriber.timeline == ["t=0:value(1)", "t=3:value(2)", "t=5:value(3)"])
    }

    @Test func asksUpstreamForUnlimitedAndDropsValuesWithoutDemand() {
        let scheduler = VirtualTimeScheduler()
        let upstream = ManualPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(1))
        upstream.throttle(for: .seconds(1), scheduler: scheduler, latest: true).subscribe(subscriber)
        #expect(upstream.subscription?.history == [.requested(.unlimited)])
        upstream.send(1)
        scheduler.advance(by: .seconds(1))
        // No demand left: 2 comes due at t=1 and is dropped.
        upstream.send(2)
        scheduler.advance(by: .seconds(1))
        subscriber.request(.max(1))
        upstream.send(3)
        scheduler.advance(by: .seconds(1))
        #expect(subscriber.history == [.subscription, .value(1), .value(3)])
    }

    @Test func cancelCancelsTheTimerAndUpstream() {
        let scheduler = VirtualTimeScheduler()
        let upstream = ManualPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>()
        upstream.throttle(for: .seconds(1), scheduler: scheduler, latest: false).subscribe(subscriber)
        upstream.send(1)
        scheduler.advance()
        upstream.send(2)
        #expect(scheduler.pendingActionCount == 1)
        subscriber.cancel()
        // As in Combine, the emission is scheduled without a cancellable; when it runs it finds the
        // subscription cancelled and delivers nothing.
        scheduler.run()
        #expect(subscriber.history == [.subscription, .value(1)])
        #expect(upstream.subscription?.history == [.requested(.unlimited), .cancelled])
    }

    @Test func chainIsReleasedAfterFinishAndAfterCancel() {
        let scheduler = VirtualTimeScheduler()
        weak var weakSubscription: AnyObject?
        do {
            let subject = PassthroughSubject<Int, Never>()
            let subscriber = TrackingSubscriber<Int, Never>()
            subject.throttle(for: .seconds(1), scheduler: scheduler, latest: true).subscribe(subscriber)
            weakSubscription = subscriber.subscription as AnyObject?
            subject.send(1)
            subject.send(2)
            subject.send(completion: .finished)
            scheduler.run()
            // All three arrived before the first emission ran: it carries the latest and the completion.
            #expect(subscriber.values == [2])
        }
        #expect(weakSubscription == nil)
        do {
            let subject = PassthroughSubject<Int, Never>()
            let subscriber = TrackingSubscriber<Int, Never>()
            subject.throttle(for: .seconds(1), scheduler: scheduler, latest: true).subscribe(subscriber)
            weakSubscription = subscriber.subscription as AnyObject?
            subject.send(1)
            subject.send(2)
            subscriber.cancel()
            // The delivery of 1 was already scheduled; it holds the subscription until it has run.
            scheduler.run()
        }
        #expect(weakSubscription == nil)
    }

    @Test func concurrentSendsRequestsAndCancelNeverOverlapOrOverDeliver() {
        for _ in 0..<20 {
            let scheduler = ConcurrentTestScheduler()
            let subject = PassthroughSubject<Int, Never>()
            let subscriber = OverlapCheckingSubscriber<Int, Never>(initialDemand: .max(5))
            subject.throttle(for: .seconds(1), scheduler: scheduler, latest: true).subscribe(subscriber)
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
