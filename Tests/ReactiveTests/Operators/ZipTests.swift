import Dispatch
import Reactive
import TestSupport
import Testing

private typealias HandPublisher = CombiningTestKit.HandPublisher
private typealias RangePublisher = CombiningTestKit.RangePublisher
private typealias SerialSubscriber = CombiningTestKit.SerialSubscriber
private typealias TestError = CombiningTestKit.TestError

/// A zipped pair flattened to a string, so histories compare with `==`.
private func pair(_ value: (Int, String)) -> String { "\(value.0)\(value.1)" }

@Suite(.offPool) struct ZipTests {
    @Test func pairsTheIthElementsOfTwoSubjects() {
        let numbers = PassthroughSubject<Int, Never>()
        let letters = PassthroughSubject<String, Never>()
        var received: [String] = []
        var completion: Subscribers.Completion<Never>?
        let cancellable = numbers.zip(letters).sink(
            receiveCompletion: { completion = $0 },
            receiveValue: { received.append(pair($0)) }
        )
        numbers.send(1)
        numbers.send(2)
        letters.send("a")
        numbers.send(3)
        letters.send("b")
        letters.send("c")
        letters.send("d")
        numbers.send(4)
        #expect(received == ["1a", "2b", "3c", "4d"])
        #expect(completion == nil)
        numbers.send(completion: .finished)
        #expect(completion == .finished)
        cancellable.cancel()
    }

    @Test func finishesWhenAFinishedSideHasNothingLeftBuffered() {
        let a = PassthroughSubject<Int, Never>()
        let b = PassthroughSubject<Int, Never>()
        let subscriber = TrackingSubscriber<(Int, Int), Never>()
        a.zip(b).subscribe(subscriber)
        a.send(1)
        a.send(2)
        a.send(completion: .finished)
        b.send(10)
        #expect(subscriber.values.map { $0.0 + $0.1 } == [11])
        #expect(subscriber.completion == nil)
        b.send(20)
        #expect(subscriber.values.map { $0.0 + $0.1 } == [11, 22])
        #expect(subscriber.completion == .finished)
        b.send(30)
        #expect(subscriber.values.count == 2)
    }

    @Test func finishedSideWithEmptyBufferFinishesAtOnceAndCancelsTheOther() {
        let a = HandPublisher<Int, Never>()
        let b = HandPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<(Int, Int), Never>()
        a.zip(b).subscribe(subscriber)
        b.send(1)
        a.send(completion: .finished)
        #expect(subscriber.completion == .finished)
        #expect(b.subscription?.history == [.requested(.unlimited), .cancelled])
    }

    @Test func failsOnTheFirstFailureAndCancelsTheOtherSide() {
        let a = HandPublisher<Int, TestError>()
        let b = HandPublisher<Int, TestError>()
        let subscriber = TrackingSubscriber<(Int, Int), TestError>()
        a.zip(b).subscribe(subscriber)
        a.send(1)
        b.send(2)
        a.send(3)
        b.send(completion: .failure(TestError(code: 7)))
        b.send(completion: .failure(TestError(code: 8)))
        a.send(completion: .finished)
        #expect(subscriber.values.map { [$0.0, $0.1] } == [[1, 2]])
        #expect(subscriber.completion == .failure(TestError(code: 7)))
        #expect(a.subscription?.history == [.requested(.unlimited), .cancelled])
    }

    @Test func downstreamDemandOfTwoGivesExactlyTwoTuplesAndRequestsTwoFromEachSide() {
        let a = HandPublisher<Int, Never>()
        let b = HandPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<(Int, Int), Never>(initialDemand: .max(2))
        a.zip(b).subscribe(subscriber)
        #expect(a.subscription?.history == [.requested(.max(2))])
        #expect(b.subscription?.history == [.requested(.max(2))])
        a.send(1)
        a.send(2)
        b.send(10)
        b.send(20)
        // Both sides overshoot; zip must not pass more than the demand on.
        a.send(3)
        b.send(30)
        #expect(subscriber.values.map { [$0.0, $0.1] } == [[1, 10], [2, 20]])
        subscriber.request(.max(1))
        #expect(subscriber.values.map { [$0.0, $0.1] } == [[1, 10], [2, 20], [3, 30]])
        #expect(a.subscription?.history == [.requested(.max(2)), .requested(.max(1))])
        #expect(b.subscription?.history == [.requested(.max(2)), .requested(.max(1))])
    }

    @Test func demandReturnedFromReceiveIsForwardedToEverySide() {
        let a = HandPublisher<Int, Never>()
        let b = HandPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<(Int, Int), Never>(initialDemand: .max(1)) { _, _ in .max(1) }
        a.zip(b).subscribe(subscriber)
        a.send(1)
        b.send(2)
        #expect(a.subscription?.history == [.requested(.max(1)), .requested(.max(1))])
        #expect(b.subscription?.history == [.requested(.max(1)), .requested(.max(1))])
    }

    @Test func demandReturnedFromReceiveUnderUnlimitedDemandStillGoesToEverySide() {
        let a = HandPublisher<Int, Never>()
        let b = HandPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<(Int, Int), Never> { _, _ in .max(2) }
        a.zip(b).subscribe(subscriber)
        a.send(1)
        b.send(2)
        #expect(a.subscription?.history == [.requested(.unlimited), .requested(.max(2))])
        #expect(b.subscription?.history == [.requested(.unlimited), .requested(.max(2))])
        #expect(subscriber.history.count == 2)
    }

    @Test func valuesSentFromInsideReceiveUnderUnlimitedDemandGoOutAfterItReturns() {
        let a = PassthroughSubject<Int, Never>()
        let b = PassthroughSubject<Int, Never>()
        var log: [String] = []
        let cancellable = a.zip(b).sink { value in
            log.append("enter \(value.0)")
            if value.0 == 1 {
                a.send(2)
                b.send(20)
                a.send(3)
            }
            log.append("exit \(value.0)")
        }
        a.send(1)
        b.send(10)
        b.send(30)
        #expect(log == ["enter 1", "exit 1", "enter 2", "exit 2", "enter 3", "exit 3"])
        cancellable.cancel()
    }

    @Test func zipsSynchronousPublishersOneAtATimeWithoutRecursion() {
        // Requesting one more from inside every receive must not nest deliveries: 100 000 deep
        // recursion would overflow the stack.
        let count = 100_000
        let subscriber = SerialSubscriber<(Int, Int), Never>(initialDemand: .max(1), demandPerValue: .max(1))
        RangePublisher(0..<count).zip(RangePublisher(0..<count)).subscribe(subscriber)
        let values = subscriber.values
        #expect(values.count == count)
        #expect(values.allSatisfy { $0.0 == $0.1 })
        #expect(subscriber.completions.count == 1)
        #expect(subscriber.overlaps == 0)
    }

    @Test func zipOfAMillionIsLinear() {
        let count = 1_000_000
        var sum = 0
        var finished = false
        let cancellable = RangePublisher(0..<count).zip(RangePublisher(0..<count)).sink(
            receiveCompletion: { _ in finished = true },
            receiveValue: { sum &+= $0.0 &+ $0.1 }
        )
        #expect(finished)
        #expect(sum == count * (count - 1))
        cancellable.cancel()
    }

    @Test func cancelInsideReceiveStopsDelivery() {
        let a = PassthroughSubject<Int, Never>()
        let b = PassthroughSubject<Int, Never>()
        let subscriber = TrackingSubscriber<(Int, Int), Never> { subscriber, value in
            if value.0 == 2 { subscriber.cancel() }
            return .none
        }
        a.zip(b).subscribe(subscriber)
        for value in 1...4 { a.send(value) }
        for value in 1...4 { b.send(value * 10) }
        #expect(subscriber.values.map { [$0.0, $0.1] } == [[1, 10], [2, 20]])
        #expect(subscriber.completion == nil)
    }

    @Test func requestInsideReceiveIsPickedUpByTheDeliveringLoop() {
        let a = HandPublisher<Int, Never>()
        let b = HandPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<(Int, Int), Never>(initialDemand: .max(1)) { subscriber, _ in
            subscriber.request(.max(1))
            return .none
        }
        a.zip(b).subscribe(subscriber)
        a.send(1)
        a.send(2)
        a.send(3)
        b.send(1)
        b.send(2)
        #expect(subscriber.values.map { $0.0 } == [1, 2])
        #expect(a.subscription?.history == [.requested(.max(1)), .requested(.max(1)), .requested(.max(1))])
    }

    @Test func zip3AndZip4GroupElements() {
        let a = PassthroughSubject<Int, Never>()
        let b = PassthroughSubject<Int, Never>()
        let c = PassthroughSubject<Int, Never>()
        let d = PassthroughSubject<Int, Never>()
        let three = TrackingSubscriber<(Int, Int, Int), Never>()
        let four = TrackingSubscriber<(Int, Int, Int, Int), Never>()
        a.zip(b, c).subscribe(three)
        a.zip(b, c, d).subscribe(four)
        a.send(1)
        b.send(2)
        c.send(3)
        d.send(4)
        a.send(5)
        b.send(6)
        c.send(7)
        a.send(completion: .finished)
        #expect(three.values.map { [$0.0, $0.1, $0.2] } == [[1, 2, 3], [5, 6, 7]])
        #expect(three.completion == .finished)
        #expect(four.values.map { [$0.0, $0.1, $0.2, $0.3] } == [[1, 2, 3, 4]])
        #expect(four.completion == nil)
        d.send(8)
        #expect(four.values.map { [$0.0, $0.1, $0.2, $0.3] } == [[1, 2, 3, 4], [5, 6, 7, 8]])
        #expect(four.completion == .finished)
    }

    @Test func transformOverloadsMapEachGroup() {
        var received: [Int] = []
        let p = [1, 2].publisher
        let two = p.zip(p) { $0 + $1 }.sink { received.append($0) }
        let three = p.zip(p, p) { $0 + $1 + $2 }.sink { received.append($0) }
        let four = p.zip(p, p, p) { $0 + $1 + $2 + $3 }.sink { received.append($0) }
        #expect(received == [2, 4, 3, 6, 4, 8])
        let typed: Publishers.Map<Publishers.Zip<Publishers.Sequence<[Int], Never>, Just<Int>>, Int> = p.zip(Just(1)) {
            $0 * $1
        }
        _ = typed
        _ = (two, three, four)
    }

    @Test func zip3OfFuturesFulfilledInReverseOrderOnOtherThreadsWaitsForAllThree() {
        // Each promise is fulfilled by its own work item, queued only once the previous one ran; no
        // work item blocks, so one pool thread is enough (three items blocked on gates needed three
        // pool threads, which Dispatch may start late on a loaded machine).
        let promises = PromiseBox<Int>(count: 3)
        let futures = (0..<3).map { index in
            Future<Int, Never> { promise in promises.store(promise, at: index) }
        }
        let subscriber = SerialSubscriber<(Int, Int, Int), Never>()
        futures[0].zip(futures[1], futures[2]).subscribe(subscriber)
        func fulfilOnAnotherThread(_ index: Int) -> Bool {
            let fulfilled = TestSignal()
            DispatchQueue.global().async {
                promises.fulfil(index, with: .success(index))
                fulfilled.signal()
            }
            return fulfilled.wait(timeout: .seconds(10))
        }
        #expect(fulfilOnAnotherThread(2))
        #expect(fulfilOnAnotherThread(1))
        #expect(subscriber.values.isEmpty)
        #expect(subscriber.completions.isEmpty)
        #expect(fulfilOnAnotherThread(0))
        #expect(subscriber.waitForCompletion())
        #expect(subscriber.values.map { [$0.0, $0.1, $0.2] } == [[0, 1, 2]])
        #expect(subscriber.completions.count == 1)
    }

    @Test func describesItselfAsZip() {
        let subscriber = TrackingSubscriber<(Int, Int), Never>()
        PassthroughSubject<Int, Never>().zip(PassthroughSubject<Int, Never>()).subscribe(subscriber)
        #expect((subscriber.subscription as? any CustomStringConvertible)?.description == "Zip")
    }

    @Test func zipsAreEquatableWhenTheirUpstreamsAre() {
        let a = RangePublisherBox(1)
        #expect(Publishers.Zip(a, a) == Publishers.Zip(a, a))
        #expect(Publishers.Zip3(a, a, RangePublisherBox(2)) != Publishers.Zip3(a, a, a))
        #expect(Publishers.Zip4(a, a, a, a) == Publishers.Zip4(a, a, a, a))
    }

    @Test func concurrentSendsOnBothSidesPairExactlyAndCompleteOnce() {
        let a = PassthroughSubject<Int, Never>()
        let b = PassthroughSubject<Int, Never>()
        let subscriber = SerialSubscriber<(Int, Int), Never>()
        a.zip(b).subscribe(subscriber)
        let perThread = 2_000
        DispatchQueue.concurrentPerform(iterations: 8) { index in
            let subject = index.isMultiple(of: 2) ? a : b
            for value in 0..<perThread { subject.send(value) }
        }
        a.send(completion: .finished)
        #expect(subscriber.waitForCompletion())
        #expect(subscriber.values.count == 4 * perThread)
        #expect(subscriber.completions.count == 1)
        #expect(subscriber.overlaps == 0)
    }

    @Test func concurrentRequestsAndCancelNeverOverDeliver() {
        for _ in 0..<20 {
            let a = PassthroughSubject<Int, Never>()
            let b = PassthroughSubject<Int, Never>()
            let subscriber = SerialSubscriber<(Int, Int), Never>(initialDemand: .max(1))
            a.zip(b).subscribe(subscriber)
            DispatchQueue.concurrentPerform(iterations: 6) { index in
                switch index {
                case 0: for value in 0..<500 { a.send(value) }
                case 1: for value in 0..<500 { b.send(value) }
                case 5: subscriber.cancel()
                default: for _ in 0..<50 { subscriber.request(.max(1)) }
                }
            }
            #expect(subscriber.values.count <= 151)
            #expect(subscriber.completions.isEmpty)
            #expect(subscriber.overlaps == 0)
        }
    }

    @Test func releasesEverythingAfterFinishing() {
        weak var weakInner: AnyObject?
        weak var weakSubscriber: TrackingSubscriber<(Int, Int), Never>?
        let a = PassthroughSubject<Int, Never>()
        let b = PassthroughSubject<Int, Never>()
        do {
            let subscriber = TrackingSubscriber<(Int, Int), Never>()
            a.zip(b).subscribe(subscriber)
            weakInner = subscriber.subscription as AnyObject?
            weakSubscriber = subscriber
            a.send(1)
            b.send(2)
            a.send(completion: .finished)
            #expect(subscriber.completion == .finished)
        }
        #expect(weakInner == nil)
        #expect(weakSubscriber == nil)
    }

    @Test func releasesEverythingAfterCancel() {
        weak var weakInner: AnyObject?
        weak var weakSubscriber: TrackingSubscriber<(Int, Int), Never>?
        let a = PassthroughSubject<Int, Never>()
        let b = PassthroughSubject<Int, Never>()
        do {
            let subscriber = TrackingSubscriber<(Int, Int), Never>()
            a.zip(b).subscribe(subscriber)
            weakInner = subscriber.subscription as AnyObject?
            weakSubscriber = subscriber
            a.send(1)
            subscriber.cancel()
        }
        #expect(weakInner == nil)
        #expect(weakSubscriber == nil)
    }

    /// A cancel from inside `receive(_:)` ends the zip while a delivery is under way: the
    /// delivering thread drops the subscriber when it returns, and nothing more is delivered.
    @Test func releasesEverythingAfterACancelInsideReceive() {
        weak var weakInner: AnyObject?
        weak var weakSubscriber: TrackingSubscriber<(Int, Int), Never>?
        let a = PassthroughSubject<Int, Never>()
        let b = PassthroughSubject<Int, Never>()
        do {
            let subscriber = TrackingSubscriber<(Int, Int), Never> { subscriber, _ in
                subscriber.cancel()
                return .none
            }
            a.zip(b).subscribe(subscriber)
            weakInner = subscriber.subscription as AnyObject?
            weakSubscriber = subscriber
            a.send(1)
            a.send(2)
            b.send(10)
            b.send(20)
            #expect(subscriber.values.map { [$0.0, $0.1] } == [[1, 10]])
        }
        #expect(weakInner == nil)
        #expect(weakSubscriber == nil)
    }
}

/// An equatable stand-in publisher for the `Equatable` conformance tests.
private struct RangePublisherBox: Publisher, Equatable {
    typealias Output = Int
    typealias Failure = Never
    let id: Int
    init(_ id: Int) { self.id = id }
    func receive<S: Subscriber>(subscriber: S) where S.Input == Int, S.Failure == Never {
        subscriber.receive(subscription: Subscriptions.empty)
        subscriber.receive(completion: .finished)
    }
}

/// The promises of futures under test, fulfilled later from any thread.
private final class PromiseBox<Output>: @unchecked Sendable {
    // @unchecked Sendable: `promises` is guarded by `lock`.
    private let lock = Lock()
    private var promises: [Future<Output, Never>.Promise?]  // Guarded by lock.

    init(count: Int) {
        promises = Array(repeating: nil, count: count)
    }

    func store(_ promise: @escaping Future<Output, Never>.Promise, at index: Int) {
        lock.withLock { promises[index] = promise }
    }

    func fulfil(_ index: Int, with result: Result<Output, Never>) {
        let promise = lock.withLock { promises[index] }
        promise?(result)
    }
}
