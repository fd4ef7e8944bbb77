import Dispatch
import Reactive
import TestSupport
import Testing

private typealias HandPublisher = CombiningTestKit.HandPublisher
private typealias SerialSubscriber = CombiningTestKit.SerialSubscriber
private typealias TestError = CombiningTestKit.TestError

@Suite(.offPool) struct SwitchToLatestTests {
    @Test func republishesOnlyTheLatestInnerPublisher() {
        let outer = PassthroughSubject<PassthroughSubject<Int, Never>, Never>()
        let first = PassthroughSubject<Int, Never>()
        let second = PassthroughSubject<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>()
        outer.switchToLatest().subscribe(subscriber)
        outer.send(first)
        first.send(1)
        first.send(2)
        outer.send(second)
        first.send(3)
        second.send(4)
        outer.send(completion: .finished)
        second.send(5)
        #expect(subscriber.completion == nil)
        second.send(completion: .finished)
        #expect(
            subscriber.history == [
                .subscription, .value(1), .value(2), .value(4), .value(5), .completion(.finished),
            ]
        )
    }

    @Test func switchingCancelsThePreviousInner() {
        let outer = PassthroughSubject<HandPublisher<Int, Never>, Never>()
        let first = HandPublisher<Int, Never>()
        let second = HandPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>()
        outer.switchToLatest().subscribe(subscriber)
        outer.send(first)
        first.send(1)
        outer.send(second)
        first.send(2)
        second.send(3)
        #expect(first.subscription?.history == [.requested(.unlimited), .cancelled])
        #expect(second.subscription?.history == [.requested(.unlimited)])
        #expect(subscriber.values == [1, 3])
    }

    @Test func aNewInnerIsAskedForTheOutstandingDemand() {
        let outer = HandPublisher<HandPublisher<Int, Never>, Never>()
        let first = HandPublisher<Int, Never>()
        let second = HandPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(3))
        outer.switchToLatest().subscribe(subscriber)
        #expect(outer.subscription?.history == [.requested(.unlimited)])
        outer.send(first)
        first.send(1)
        outer.send(second)
        subscriber.request(.max(2))
        #expect(first.subscription?.history == [.requested(.max(3)), .cancelled])
        #expect(second.subscription?.history == [.requested(.max(2)), .requested(.max(2))])
    }

    @Test func finishesOnlyWhenTheUpstreamAndTheCurrentInnerFinished() {
        let outer = PassthroughSubject<PassthroughSubject<Int, Never>, Never>()
        let inner = PassthroughSubject<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>()
        outer.switchToLatest().subscribe(subscriber)
        outer.send(inner)
        inner.send(completion: .finished)
        #expect(subscriber.completion == nil)
        outer.send(completion: .finished)
        #expect(subscriber.history == [.subscription, .completion(.finished)])
    }

    @Test func emptyUpstreamFinishesAtOnce() {
        let subscriber = TrackingSubscriber<Int, Never>()
        Empty<Just<Int>, Never>().switchToLatest().subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .completion(.finished)])
    }

    @Test func innerFailureFailsAndCancelsTheUpstream() {
        let outer = HandPublisher<Fail<Int, TestError>, TestError>()
        let subscriber = TrackingSubscriber<Int, TestError>()
        outer.switchToLatest().subscribe(subscriber)
        outer.send(Fail(error: TestError(code: 4)))
        #expect(subscriber.history == [.subscription, .completion(.failure(TestError(code: 4)))])
        #expect(outer.subscription?.history == [.requested(.unlimited), .cancelled])
    }

    @Test func failureTypesCombineAsInCombine() {
        let neverNever = [Just(1), Just(2)].publisher.switchToLatest()
        let neverFailing = Just(Fail<Int, TestError>(error: TestError(code: 1))).switchToLatest()
        let failingNever = [Just(3)].publisher.setFailureType(to: TestError.self).switchToLatest()
        #expect(
            type(of: neverNever) == Publishers.SwitchToLatest<Just<Int>, Publishers.Sequence<[Just<Int>], Never>>.self
        )
        let values = TrackingSubscriber<Int, Never>()
        neverNever.subscribe(values)
        #expect(values.history == [.subscription, .value(1), .value(2), .completion(.finished)])
        let failing = TrackingSubscriber<Int, TestError>()
        neverFailing.subscribe(failing)
        #expect(failing.history == [.subscription, .completion(.failure(TestError(code: 1)))])
        let mapped = TrackingSubscriber<Int, TestError>()
        failingNever.subscribe(mapped)
        #expect(mapped.history == [.subscription, .value(3), .completion(.finished)])
    }

    @Test func concurrentSwitchesAndSendsAreSerialized() {
        let outer = PassthroughSubject<PassthroughSubject<Int, Never>, Never>()
        let inners = (0..<4).map { _ in PassthroughSubject<Int, Never>() }
        let subscriber = SerialSubscriber<Int, Never>()
        outer.switchToLatest().subscribe(subscriber)
        DispatchQueue.concurrentPerform(iterations: 5) { index in
            if index == 4 {
                for round in 0..<200 { outer.send(inners[round % 4]) }
            } else {
                for value in 0..<1_000 { inners[index].send(value) }
            }
        }
        outer.send(completion: .finished)
        let last = inners[199 % 4]
        last.send(completion: .finished)
        #expect(subscriber.waitForCompletion())
        #expect(subscriber.values.count <= 4_000)
        #expect(subscriber.completions.count == 1)
        #expect(subscriber.overlaps == 0)
    }

    @Test func releasesEverythingAfterFinishingOrCancelling() {
        weak var finished: AnyObject?
        weak var cancelled: AnyObject?
        let outer = PassthroughSubject<PassthroughSubject<Int, Never>, Never>()
        let inner = PassthroughSubject<Int, Never>()
        do {
            let first = TrackingSubscriber<Int, Never>()
            let second = TrackingSubscriber<Int, Never>()
            outer.switchToLatest().subscribe(first)
            outer.switchToLatest().subscribe(second)
            finished = first.subscription as AnyObject?
            cancelled = second.subscription as AnyObject?
            outer.send(inner)
            inner.send(1)
            second.cancel()
            outer.send(completion: .finished)
            inner.send(completion: .finished)
            #expect(first.completion == .finished)
        }
        #expect(finished == nil)
        #expect(cancelled == nil)
    }
}
