import Dispatch
import Reactive
import TestSupport
import Testing

@Suite struct CollectByTimeTests {
    @Test func byTimeEmitsWhatWasCollectedAtEveryTickAndSkipsEmptyTicks() {
        let scheduler = VirtualTimeScheduler()
        let subject = PassthroughSubject<Int, Never>()
        let subscriber = TimedSubscriber<[Int], Never>(scheduler: scheduler)
        subject.collect(.byTime(scheduler, .seconds(1))).subscribe(subscriber)
        subject.send(1)
        subject.send(2)
        scheduler.advance(to: at(0.5))
        subject.send(3)
        scheduler.advance(to: at(2.5))
        subject.send(4)
        scheduler.advance(to: at(2.7))
        subject.send(completion: .finished)
        scheduler.advance(by: .seconds(5))
        #expect(subscriber.timeline == ["t=1:value([1, 2, 3])", "t=2.7:value([4])", "t=2.7:finished"])
        #expect(scheduler.pendingActionCount == 0)
    }

    @Test func byTimeOrCountEmitsAFullGroupAtOnceAndTheRestAtTheTick() {
        let scheduler = VirtualTimeScheduler()
        let subject = PassthroughSubject<Int, Never>()
        let subscriber = TimedSubscriber<[Int], Never>(scheduler: scheduler)
        subject.collect(.byTimeOrCount(scheduler, .seconds(1), 2)).subscribe(subscriber)
        [1, 2, 3].forEach(subject.send)
        scheduler.advance(to: at(1.5))
        [4, 5, 6].forEach(subject.send)
        scheduler.advance(to: at(2.5))
        #expect(
            subscriber.timeline == [
                "t=0:value([1, 2])", "t=1:value([3])", "t=1.5:value([4, 5])", "t=2:value([6])",
            ]
        )
    }

    @Test func byTimeOrCountAsksUpstreamForCountPerRequestedGroup() {
        let scheduler = VirtualTimeScheduler()
        let upstream = ManualPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<[Int], Never>(initialDemand: .max(1))
        upstream.collect(.byTimeOrCount(scheduler, .seconds(1), 3)).subscribe(subscriber)
        #expect(upstream.subscription?.history == [.requested(.max(3))])
        subscriber.request(.max(2))
        #expect(upstream.subscription?.history == [.requested(.max(3)), .requested(.max(6))])
    }

    @Test func byTimeAsksUpstreamForUnlimited() {
        let scheduler = VirtualTimeScheduler()
        let upstream = ManualPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<[Int], Never>(initialDemand: .max(1))
        upstream.collect(.byTime(scheduler, .seconds(1))).subscribe(subscriber)
        subscriber.request(.max(2))
        #expect(upstream.subscription?.history == [.requested(.unlimited)])
    }

    @Test func aGroupWithoutDemandWaitsForIt() {
        let scheduler = VirtualTimeScheduler()
        let upstream = ManualPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<[Int], Never>(initialDemand: .max(1))
        upstream.collect(.byTimeOrCount(scheduler, .seconds(1), 2)).subscribe(subscriber)
        [1, 2, 3, 4].forEach { upstream.send($0) }
        scheduler.advance(by: .seconds(1))
        #expect(subscriber.values == [[1, 2]])
        subscriber.request(.max(1))
        #expect(subscriber.values == [[1, 2], [3, 4]])
    }

    @Test func finishWaitsForDemandToDeliverTheRest() {
        let scheduler = VirtualTimeScheduler()
        let subject = PassthroughSubject<Int, Never>()
        let subscriber = TrackingSubscriber<[Int], Never>(initialDemand: .max(1))
        subject.collect(.byTime(scheduler, .seconds(1))).subscribe(subscriber)
        subject.send(1)
        scheduler.advance(by: .seconds(1))
        subject.send(2)
        subject.send(completion: .finished)
        #expect(subscriber.history == [.subscription, .value([1])])
        subscriber.request(.max(1))
        #expect(subscriber.history == [.subscription, .value([1]), .value([2]), .completion(.finished)])
    }

    @Test func failureDropsTheCollectedElements() {
        let scheduler = VirtualTimeScheduler()
        let subject = PassthroughSubject<Int, CodedError>()
        let subscriber = TrackingSubscriber<[Int], CodedError>()
        subject.collect(.byTime(scheduler, .seconds(1))).subscribe(subscriber)
        subject.send(1)
        subject.send(completion: .failure(CodedError(code: 3)))
        scheduler.run()
        #expect(subscriber.history == [.subscription, .completion(.failure(CodedError(code: 3)))])
    }

    @Test func cancelStopsTheTimerAndCancelsUpstream() {
        let scheduler = VirtualTimeScheduler()
        let upstream = ManualPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<[Int], Never>()
        upstream.collect(.byTime(scheduler, .seconds(1))).subscribe(subscriber)
        upstream.send(1)
        #expect(scheduler.pendingActionCount == 1)
        subscriber.cancel()
        #expect(scheduler.pendingActionCount == 0)
        #expect(upstream.subscription?.history == [.requested(.unlimited), .cancelled])
        #expect(subscriber.history == [.subscription])
    }

    @Test func aCountBelowOneCountsAsOne() {
        let scheduler = VirtualTimeScheduler()
        let subject = PassthroughSubject<Int, Never>()
        let subscriber = TrackingSubscriber<[Int], Never>()
        subject.collect(.byTimeOrCount(scheduler, .seconds(1), 0)).subscribe(subscriber)
        [1, 2].forEach(subject.send)
        #expect(subscriber.values == [[1], [2]])
    }

    @Test func chainIsReleasedAfterFinishAndAfterCancel() {
        let scheduler = VirtualTimeScheduler()
        weak var weakSubscription: AnyObject?
        do {
            let subject = PassthroughSubject<Int, Never>()
            let subscriber = TrackingSubscriber<[Int], Never>()
            subject.collect(.byTime(scheduler, .seconds(1))).subscribe(subscriber)
            weakSubscription = subscriber.subscription as AnyObject?
            subject.send(1)
            subject.send(completion: .finished)
            #expect(subscriber.values == [[1]])
        }
        #expect(weakSubscription == nil)
        do {
            let subject = PassthroughSubject<Int, Never>()
            let subscriber = TrackingSubscriber<[Int], Never>()
            subject.collect(.byTimeOrCount(scheduler, .seconds(1), 5)).subscribe(subscriber)
            weakSubscription = subscriber.subscription as AnyObject?
            subject.send(1)
            subscriber.cancel()
        }
        #expect(weakSubscription == nil)
        #expect(scheduler.pendingActionCount == 0)
    }

    @Test func timerTicksAndCountFlushesFromOtherThreadsNeverOverlap() {
        for _ in 0..<20 {
            let scheduler = VirtualTimeScheduler()
            let subject = PassthroughSubject<Int, Never>()
            let subscriber = OverlapCheckingSubscriber<[Int], Never>(initialDemand: .max(50))
            subject.collect(.byTimeOrCount(scheduler, .milliseconds(1), 3)).subscribe(subscriber)
            DispatchQueue.concurrentPerform(iterations: 8) { index in
                if index < 2 {
                    for _ in 0..<50 { scheduler.advance(by: .milliseconds(1)) }
                } else {
                    for value in 0..<30 {
                        subject.send(index * 100 + value)
                        if value % 10 == 0 { subscriber.request(.max(1)) }
                    }
                    if index == 7 { subject.send(completion: .finished) }
                }
            }
            #expect(subscriber.received.count <= 50 + 6 * 3)
            subscriber.request(.unlimited)
            let elements = subscriber.received.flatMap { $0 }
            #expect(elements.count == Set(elements).count)
            #expect(subscriber.received.allSatisfy { $0.count <= 3 })
            #expect(subscriber.completions <= 1)
            #expect(subscriber.overlaps == 0)
        }
    }
}
