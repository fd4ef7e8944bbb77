import Dispatch
import Reactive
import TestSupport
import Testing

private typealias HandPublisher = CombiningTestKit.HandPublisher
private typealias SerialSubscriber = CombiningTestKit.SerialSubscriber
private typealias TestError = CombiningTestKit.TestError

@Suite(.offPool) struct CombineLatestTests {
    @Test func emitsOnEveryValueOnceBothSidesHaveOne() {
        let letters = PassthroughSubject<String, Never>()
        let numbers = PassthroughSubject<Int, Never>()
        var received: [String] = []
        var completion: Subscribers.Completion<Never>?
        let cancellable = letters.combineLatest(numbers).sink(
            receiveCompletion: { completion = $0 },
            receiveValue: { received.append("\($0.0)\($0.1)") }
        )
        letters.send("a")
        letters.send("b")
        numbers.send(1)
        numbers.send(2)
        letters.send("c")
        letters.send(completion: .finished)
        numbers.send(3)
        #expect(received == ["b1", "b2", "c2", "c3"])
        #expect(completion == nil)
        numbers.send(completion: .finished)
        #expect(completion == .finished)
        cancellable.cancel()
    }

    @Test func startsWithTheCurrentValuesOfCurrentValueSubjects() {
        let a = CurrentValueSubject<Int, Never>(1)
        let b = CurrentValueSubject<Int, Never>(2)
        let c = CurrentValueSubject<Int, Never>(3)
        let subscriber = TrackingSubscriber<(Int, Int, Int), Never>()
        a.combineLatest(b, c).subscribe(subscriber)
        b.send(5)
        #expect(subscriber.values.map { [$0.0, $0.1, $0.2] } == [[1, 2, 3], [1, 5, 3]])
    }

    @Test func combineLatest4EmitsTheLatestOfAllFour() {
        let a = PassthroughSubject<Int, Never>()
        let b = PassthroughSubject<Int, Never>()
        let c = PassthroughSubject<Int, Never>()
        let d = PassthroughSubject<Int, Never>()
        let subscriber = TrackingSubscriber<(Int, Int, Int, Int), Never>()
        a.combineLatest(b, c, d).subscribe(subscriber)
        a.send(1)
        b.send(2)
        c.send(3)
        d.send(4)
        a.send(9)
        for subject in [a, b, c, d] { subject.send(completion: .finished) }
        #expect(subscriber.values.map { [$0.0, $0.1, $0.2, $0.3] } == [[1, 2, 3, 4], [9, 2, 3, 4]])
        #expect(subscriber.completion == .finished)
    }

    @Test func failsOnTheFirstFailureAndCancelsTheOthers() {
        let a = HandPublisher<Int, TestError>()
        let b = HandPublisher<Int, TestError>()
        let subscriber = TrackingSubscriber<(Int, Int), TestError>()
        a.combineLatest(b).subscribe(subscriber)
        a.send(1)
        b.send(2)
        a.send(completion: .failure(TestError(code: 1)))
        b.send(3)
        #expect(subscriber.values.map { [$0.0, $0.1] } == [[1, 2]])
        #expect(subscriber.completion == .failure(TestError(code: 1)))
        #expect(b.subscription?.history == [.requested(.unlimited), .cancelled])
    }

    @Test func forwardsDemandAndKeepsOnlyTheLatestWhenDemandRunsOut() {
        let a = HandPublisher<Int, Never>()
        let b = HandPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<(Int, Int), Never>(initialDemand: .max(1))
        a.combineLatest(b).subscribe(subscriber)
        #expect(a.subscription?.history == [.requested(.max(1))])
        a.send(1)
        b.send(10)
        a.send(2)
        a.send(3)
        #expect(subscriber.values.map { [$0.0, $0.1] } == [[1, 10]])
        subscriber.request(.max(1))
        #expect(subscriber.values.map { [$0.0, $0.1] } == [[1, 10], [3, 10]])
        #expect(b.subscription?.history == [.requested(.max(1)), .requested(.max(1))])
    }

    @Test func transformOverloadsMapEachCombination() {
        let a = CurrentValueSubject<Int, Never>(1)
        var received: [Int] = []
        let two = a.combineLatest(Just(10)) { $0 + $1 }.sink { received.append($0) }
        let three = a.combineLatest(Just(10), Just(100)) { $0 + $1 + $2 }.sink { received.append($0) }
        let four = a.combineLatest(Just(10), Just(100), Just(1_000)) { $0 + $1 + $2 + $3 }.sink { received.append($0) }
        a.send(2)
        #expect(received == [11, 111, 1_111, 12, 112, 1_112])
        _ = (two, three, four)
    }

    @Test func describesItselfAsCombineLatest() {
        let subscriber = TrackingSubscriber<(Int, Int), Never>()
        PassthroughSubject<Int, Never>().combineLatest(PassthroughSubject<Int, Never>()).subscribe(subscriber)
        #expect((subscriber.subscription as? any CustomStringConvertible)?.description == "CombineLatest")
    }

    @Test func concurrentSendsAreSerializedAndCompleteOnce() {
        let a = PassthroughSubject<Int, Never>()
        let b = PassthroughSubject<Int, Never>()
        let subscriber = SerialSubscriber<(Int, Int), Never>()
        a.combineLatest(b).subscribe(subscriber)
        a.send(0)
        b.send(0)
        DispatchQueue.concurrentPerform(iterations: 6) { index in
            let subject = index.isMultiple(of: 2) ? a : b
            for value in 1...1_000 { subject.send(value) }
        }
        a.send(completion: .finished)
        b.send(completion: .finished)
        #expect(subscriber.waitForCompletion())
        // Values that arrive during a delivery are coalesced into the latest combination.
        #expect(subscriber.values.count <= 6_001)
        #expect(subscriber.values.count >= 1)
        #expect(subscriber.completions.count == 1)
        #expect(subscriber.overlaps == 0)
    }

    @Test func releasesEverythingAfterFinishingOrCancelling() {
        weak var finishedInner: AnyObject?
        weak var cancelledInner: AnyObject?
        let a = PassthroughSubject<Int, Never>()
        let b = PassthroughSubject<Int, Never>()
        do {
            let first = TrackingSubscriber<(Int, Int), Never>()
            let second = TrackingSubscriber<(Int, Int), Never>()
            a.combineLatest(b).subscribe(first)
            Publishers.CombineLatest(b, a).subscribe(second)
            finishedInner = first.subscription as AnyObject?
            cancelledInner = second.subscription as AnyObject?
            a.send(1)
            b.send(2)
            second.cancel()
            a.send(completion: .finished)
            b.send(completion: .finished)
            #expect(first.completion == .finished)
        }
        #expect(finishedInner == nil)
        #expect(cancelledInner == nil)
    }
}
