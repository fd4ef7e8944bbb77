import Dispatch
import Reactive
import TestSupport
import Testing

private typealias HandPublisher = CombiningTestKit.HandPublisher
private typealias RangePublisher = CombiningTestKit.RangePublisher
private typealias SerialSubscriber = CombiningTestKit.SerialSubscriber
private typealias TestError = CombiningTestKit.TestError

@Suite struct BufferTests {
    @Test func keepFullPrefetchesTheSizeAndRefillsOnePerDeliveredElement() {
        let upstream = HandPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: nil)
        upstream.buffer(size: 3, prefetch: .keepFull, whenFull: .dropNewest).subscribe(subscriber)
        #expect(upstream.subscription?.history == [.requested(.max(3))])
        upstream.send(1)
        upstream.send(2)
        subscriber.request(.max(1))
        #expect(subscriber.values == [1])
        #expect(upstream.subscription?.history == [.requested(.max(3)), .requested(.max(1))])
        subscriber.request(.max(2))
        #expect(subscriber.values == [1, 2])
        #expect(upstream.send(3) == .max(1))  // delivered at once: refilled through the returned demand
        #expect(subscriber.values == [1, 2, 3])
    }

    @Test func byRequestAsksForUnlimitedAndHoldsWhatWasNotAskedFor() {
        let upstream = HandPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: nil)
        upstream.buffer(size: 3, prefetch: .byRequest, whenFull: .dropOldest).subscribe(subscriber)
        #expect(upstream.subscription?.history == [.requested(.unlimited)])
        for value in 1...5 { upstream.send(value) }
        subscriber.request(.max(2))
        #expect(subscriber.values == [3, 4])
        subscriber.request(.max(5))
        #expect(subscriber.values == [3, 4, 5])
        upstream.send(6)
        #expect(subscriber.values == [3, 4, 5, 6])
    }

    @Test func dropNewestKeepsTheFirstElements() {
        let subject = PassthroughSubject<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: nil)
        subject.buffer(size: 2, prefetch: .byRequest, whenFull: .dropNewest).subscribe(subscriber)
        for value in 1...4 { subject.send(value) }
        subject.send(completion: .finished)
        subscriber.request(.unlimited)
        #expect(subscriber.history == [.subscription, .value(1), .value(2), .completion(.finished)])
    }

    @Test func customErrorFailsBehindTheBufferedElementsAndCancelsTheUpstream() {
        let upstream = HandPublisher<Int, TestError>()
        let subscriber = TrackingSubscriber<Int, TestError>(initialDemand: nil)
        upstream.buffer(size: 2, prefetch: .byRequest, whenFull: .customError { TestError(code: 9) })
            .subscribe(subscriber)
        for value in 1...4 { upstream.send(value) }
        #expect(upstream.subscription?.history == [.requested(.unlimited), .cancelled])
        #expect(subscriber.history == [.subscription])
        subscriber.request(.max(1))
        subscriber.request(.max(1))
        #expect(
            subscriber.history == [.subscription, .value(1), .value(2), .completion(.failure(TestError(code: 9)))]
        )
    }

    @Test func completionWaitsBehindBufferedElements() {
        let upstream = HandPublisher<Int, TestError>()
        let subscriber = TrackingSubscriber<Int, TestError>(initialDemand: nil)
        upstream.buffer(size: 5, prefetch: .keepFull, whenFull: .dropNewest).subscribe(subscriber)
        upstream.send(1)
        upstream.send(2)
        upstream.send(completion: .failure(TestError(code: 1)))
        #expect(subscriber.history == [.subscription])
        subscriber.request(.max(1))
        #expect(subscriber.history == [.subscription, .value(1)])
        subscriber.request(.max(1))
        #expect(subscriber.history == [.subscription, .value(1), .value(2), .completion(.failure(TestError(code: 1)))])
    }

    @Test func passesElementsStraightThroughUnderUnlimitedDemand() {
        let subscriber = TrackingSubscriber<Int, Never>()
        [1, 2, 3].publisher.buffer(size: 1, prefetch: .keepFull, whenFull: .dropNewest).subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .value(1), .value(2), .value(3), .completion(.finished)])
    }

    @Test func requestingOneAtATimeFromReceiveDoesNotRecurse() {
        let count = 100_000
        let subscriber = SerialSubscriber<Int, Never>(initialDemand: .max(1), demandPerValue: .max(1))
        RangePublisher(0..<count).buffer(size: 8, prefetch: .keepFull, whenFull: .dropNewest).subscribe(subscriber)
        #expect(subscriber.values == Array(0..<count))
        #expect(subscriber.completions.count == 1)
    }

    @Test func describesItselfAsBuffer() {
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: nil)
        PassthroughSubject<Int, Never>().buffer(size: 1, prefetch: .byRequest, whenFull: .dropOldest)
            .subscribe(subscriber)
        #expect((subscriber.subscription as? any CustomStringConvertible)?.description == "Buffer")
    }

    @Test func concurrentSendsAndRequestsNeverOverDeliver() {
        for _ in 0..<20 {
            let subject = PassthroughSubject<Int, Never>()
            let subscriber = SerialSubscriber<Int, Never>(initialDemand: .max(1))
            subject.buffer(size: 10, prefetch: .byRequest, whenFull: .dropOldest).subscribe(subscriber)
            DispatchQueue.concurrentPerform(iterations: 6) { index in
                switch index {
                case 0, 1: for value in 0..<300 { subject.send(value) }
                case 5: subscriber.cancel()
                default: for _ in 0..<40 { subscriber.request(.max(1)) }
                }
            }
            #expect(subscriber.values.count <= 121)
            #expect(subscriber.completions.isEmpty)
            #expect(subscriber.overlaps == 0)
        }
    }

    @Test func releasesEverythingAfterFinishingOrCancelling() {
        weak var finished: AnyObject?
        weak var cancelled: AnyObject?
        let subject = PassthroughSubject<Int, Never>()
        do {
            let first = TrackingSubscriber<Int, Never>()
            let second = TrackingSubscriber<Int, Never>(initialDemand: nil)
            subject.buffer(size: 2, prefetch: .keepFull, whenFull: .dropNewest).subscribe(first)
            subject.buffer(size: 2, prefetch: .byRequest, whenFull: .dropNewest).subscribe(second)
            finished = first.subscription as AnyObject?
            cancelled = second.subscription as AnyObject?
            subject.send(1)
            second.cancel()
            subject.send(completion: .finished)
            #expect(first.completion == .finished)
        }
        #expect(finished == nil)
        #expect(cancelled == nil)
    }
}
