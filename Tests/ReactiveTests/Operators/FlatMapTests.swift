import Dispatch
import Reactive
import TestSupport
import Testing

private typealias HandPublisher = CombiningTestKit.HandPublisher
private typealias RangePublisher = CombiningTestKit.RangePublisher
private typealias SerialSubscriber = CombiningTestKit.SerialSubscriber
private typealias TestError = CombiningTestKit.TestError

/// A thread-safe log of strings.
private final class Log: @unchecked Sendable {
    // @unchecked Sendable: `entries` is guarded by `lock`.
    private let lock = Lock()
    private var entries: [String] = []  // Guarded by lock.

    func append(_ entry: String) { lock.withLock { entries.append(entry) } }
    var all: [String] { lock.withLock { entries } }
}

/// A subscriber that keeps its subscription for good (as a subscriber may): only the subscription
/// letting go of it on cancel breaks the cycle between the two. Cancels when it receives 2.
private final class KeepingSubscriber: Subscriber, @unchecked Sendable {
    // @unchecked Sendable: used on one thread.
    typealias Input = Int
    typealias Failure = Never

    var subscription: (any Subscription)?
    var values: [Int] = []

    func receive(subscription: any Subscription) {
        self.subscription = subscription
        subscription.request(.unlimited)
    }

    func receive(_ input: Int) -> Subscribers.Demand {
        values.append(input)
        if input == 2 { subscription?.cancel() }
        return .none
    }

    func receive(completion: Subscribers.Completion<Never>) {}
}

@Suite(.offPool) struct FlatMapTests {
    @Test func deliversInnerValuesAsTheyArriveAndFinishesWhenAllFinished() {
        let outer = PassthroughSubject<Int, Never>()
        let inners = [PassthroughSubject<String, Never>(), PassthroughSubject<String, Never>()]
        let subscriber = TrackingSubscriber<String, Never>()
        outer.flatMap { inners[$0] }.subscribe(subscriber)
        outer.send(0)
        inners[0].send("a")
        outer.send(1)
        inners[1].send("b")
        inners[0].send("c")
        inners[0].send(completion: .finished)
        outer.send(completion: .finished)
        inners[1].send("d")
        #expect(subscriber.completion == nil)
        inners[1].send(completion: .finished)
        #expect(
            subscriber.history == [
                .subscription, .value("a"), .value("b"), .value("c"), .value("d"), .completion(.finished),
            ]
        )
    }

    @Test func flatMapsJustsFromASequence() {
        let subscriber = TrackingSubscriber<Int, Never>()
        [1, 2, 3].publisher.flatMap { Just($0 * 10) }.subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .value(10), .value(20), .value(30), .completion(.finished)])
    }

    @Test func aFutureChainRunsItsStepsInOrder() {
        let log = Log()
        let done = TestSignal()
        func step(_ name: String, _ value: Int) -> Deferred<Future<Int, Never>> {
            Deferred {
                Future { promise in
                    log.append("\(name) started")
                    DispatchQueue.global().async {
                        log.append("\(name) finished")
                        promise(.success(value))
                    }
                }
            }
        }
        let cancellable = step("step 1", 1)
            .flatMap { first in step("step 2", first + 1) }
            .flatMap { second in step("step 3", second + 1) }
            .sink(
                receiveCompletion: { _ in done.signal() },
                receiveValue: { log.append("value \($0)") }
            )
        #expect(done.wait(timeout: .seconds(10)))
        #expect(
            log.all == [
                "step 1 started", "step 1 finished", "step 2 started", "step 2 finished", "step 3 started",
                "step 3 finished", "value 3",
            ]
        )
        cancellable.cancel()
    }

    @Test func maxPublishersOneSerializesTheInnerPublishers() {
        let outer = HandPublisher<Int, Never>()
        let inners = [PassthroughSubject<Int, Never>(), PassthroughSubject<Int, Never>()]
        let subscriber = TrackingSubscriber<Int, Never>()
        outer.flatMap(maxPublishers: .max(1)) { inners[$0] }.subscribe(subscriber)
        #expect(outer.subscription?.history == [.requested(.max(1))])
        outer.send(0)
        inners[0].send(1)
        inners[0].send(completion: .finished)
        #expect(outer.subscription?.history == [.requested(.max(1)), .requested(.max(1))])
        outer.send(1)
        inners[1].send(2)
        inners[0].send(99)
        #expect(subscriber.values == [1, 2])
    }

    @Test func innerPublishersAreAskedOneAtATimeUnderFiniteDemand() {
        let outer = PassthroughSubject<Int, Never>()
        let inners = [HandPublisher<Int, Never>(), HandPublisher<Int, Never>()]
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(2))
        outer.flatMap { inners[$0] }.subscribe(subscriber)
        outer.send(0)
        outer.send(1)
        #expect(inners[0].subscription?.history == [.requested(.max(1))])
        // A value delivered at once asks its inner for one more through the returned demand; a value
        // that has to wait asks through `request` when it finally goes out.
        #expect(inners[0].send(1) == .max(1))
        #expect(inners[1].send(2) == .max(1))
        #expect(inners[0].send(3) == .none)
        #expect(subscriber.values == [1, 2])
        subscriber.request(.max(5))
        #expect(subscriber.values == [1, 2, 3])
        #expect(inners[0].subscription?.history == [.requested(.max(1)), .requested(.max(1))])
        #expect(inners[1].subscription?.history == [.requested(.max(1))])
    }

    @Test func unlimitedDemandAsksInnerPublishersForUnlimited() {
        let inner = HandPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>()
        Just(0).flatMap { _ in inner }.subscribe(subscriber)
        #expect(inner.subscription?.history == [.requested(.unlimited)])
    }

    @Test func innerFailureCancelsTheUpstreamAndTheOtherInners() {
        let outer = HandPublisher<Int, TestError>()
        let inners = [HandPublisher<Int, TestError>(), HandPublisher<Int, TestError>()]
        let subscriber = TrackingSubscriber<Int, TestError>()
        outer.flatMap { inners[$0] }.subscribe(subscriber)
        outer.send(0)
        outer.send(1)
        inners[0].send(1)
        inners[1].send(completion: .failure(TestError(code: 3)))
        inners[0].send(2)
        #expect(subscriber.history == [.subscription, .value(1), .completion(.failure(TestError(code: 3)))])
        #expect(outer.subscription?.history == [.requested(.unlimited), .cancelled])
        #expect(inners[0].subscription?.history == [.requested(.unlimited), .cancelled])
    }

    @Test func upstreamFailureCancelsTheInners() {
        let outer = HandPublisher<Int, TestError>()
        let inner = HandPublisher<Int, TestError>()
        let subscriber = TrackingSubscriber<Int, TestError>()
        outer.flatMap { _ in inner }.subscribe(subscriber)
        outer.send(0)
        outer.send(completion: .failure(TestError(code: 1)))
        #expect(subscriber.history == [.subscription, .completion(.failure(TestError(code: 1)))])
        #expect(inner.subscription?.history == [.requested(.unlimited), .cancelled])
    }

    @Test func cancelCancelsTheUpstreamAndEveryInner() {
        let outer = HandPublisher<Int, Never>()
        let inner = HandPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>()
        outer.flatMap { _ in inner }.subscribe(subscriber)
        outer.send(0)
        outer.send(1)
        subscriber.cancel()
        inner.send(5)
        #expect(subscriber.history == [.subscription])
        #expect(outer.subscription?.history == [.requested(.unlimited), .cancelled])
        let cancelledInner: [TrackingSubscription.Event] = [.requested(.unlimited), .cancelled]
        #expect(inner.subscriptions.map(\.history) == [cancelledInner, cancelledInner])
    }

    @Test func cancelInsideReceiveStopsDelivery() {
        let subscriber = TrackingSubscriber<Int, Never> { subscriber, value in
            if value == 2 { subscriber.cancel() }
            return .none
        }
        RangePublisher(0..<10).flatMap { RangePublisher($0..<($0 + 2)) }.subscribe(subscriber)
        #expect(subscriber.values == [0, 1, 1, 2])
        #expect(subscriber.completion == nil)
    }

    @Test func requestingOneAtATimeFromReceiveDoesNotRecurse() {
        let count = 100_000
        let subscriber = SerialSubscriber<Int, Never>(initialDemand: .max(1), demandPerValue: .max(1))
        RangePublisher(0..<count).flatMap { Just($0) }.subscribe(subscriber)
        #expect(subscriber.values == Array(0..<count))
        #expect(subscriber.completions.count == 1)
    }

    @Test func flatMapsAHundredThousandJusts() {
        var sum = 0
        var finished = false
        let cancellable = (0..<100_000).publisher.flatMap { Just($0) }.sink(
            receiveCompletion: { _ in finished = true },
            receiveValue: { sum &+= $0 }
        )
        #expect(sum == 100_000 * 99_999 / 2)
        #expect(finished)
        cancellable.cancel()
    }

    // MARK: Justs (taken in one step, without a child subscription)

    @Test func justValuesWaitForDemandAndGoOutInOrder() {
        let outer = HandPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(1))
        outer.flatMap { Just($0 * 10) }.subscribe(subscriber)
        #expect(outer.send(1) == .none)
        #expect(outer.send(2) == .none)
        #expect(outer.send(3) == .none)
        #expect(subscriber.values == [10])
        subscriber.request(.max(1))
        #expect(subscriber.values == [10, 20])
        outer.send(completion: .finished)
        #expect(subscriber.completion == nil)
        subscriber.request(.max(5))
        #expect(subscriber.history == [.subscription, .value(10), .value(20), .value(30), .completion(.finished)])
    }

    @Test func aJustAsksTheOuterForOneMoreOnceItIsTakenUnderMaxPublishers() {
        let outer = HandPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(1))
        outer.flatMap(maxPublishers: .max(2)) { Just($0) }.subscribe(subscriber)
        #expect(outer.subscription?.history == [.requested(.max(2))])
        outer.send(1)
        // Delivered at once, then finished: the outer is asked for one more.
        #expect(outer.subscription?.history == [.requested(.max(2)), .requested(.max(1))])
        outer.send(2)
        // No demand: the value waits, but the Just has finished, so the outer is asked again.
        #expect(outer.subscription?.history == [.requested(.max(2)), .requested(.max(1)), .requested(.max(1))])
        #expect(subscriber.values == [1])
        outer.send(completion: .finished)
        subscriber.request(.max(1))
        #expect(subscriber.history == [.subscription, .value(1), .value(2), .completion(.finished)])
    }

    @Test func cancelInsideReceiveOfAJustValueCancelsTheOuterAndDropsTheRest() {
        let outer = HandPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never> { subscriber, value in
            if value == 2 { subscriber.cancel() }
            return .none
        }
        outer.flatMap { Just($0) }.subscribe(subscriber)
        outer.send(1)
        outer.send(2)
        outer.send(3)
        outer.send(completion: .finished)
        #expect(subscriber.history == [.subscription, .value(1), .value(2)])
        #expect(outer.subscription?.history == [.requested(.unlimited), .cancelled])
    }

    @Test func requestInsideReceiveOfAJustValueDeliversTheQueuedOnesWithoutRecursing() {
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: nil) { _, _ in .max(1) }
        Publishers.Merge3(Just(1), Just(2), Just(3)).subscribe(subscriber)
        #expect(subscriber.history == [.subscription])
        subscriber.request(.max(1))
        #expect(subscriber.history == [.subscription, .value(1), .value(2), .value(3), .completion(.finished)])
    }

    @Test func aJustFromAFailingOuterStillGoesOutBeforeTheFailure() {
        let outer = HandPublisher<Int, TestError>()
        let subscriber = TrackingSubscriber<Int, TestError>(initialDemand: .max(1))
        outer.flatMap { Just($0).setFailureType(to: TestError.self) }.subscribe(subscriber)
        outer.send(1)
        outer.send(completion: .failure(TestError(code: 4)))
        #expect(subscriber.history == [.subscription, .value(1), .completion(.failure(TestError(code: 4)))])
    }

    @Test func justsUnderAFailingOuterWaitForDemandAndAFailureDropsTheWaitingOnes() {
        let outer = HandPublisher<Int, TestError>()
        let subscriber = TrackingSubscriber<Int, TestError>(initialDemand: .max(1))
        // The overload for inner publishers that cannot fail wraps each `Just` in `SetFailureType`.
        outer.flatMap { Just($0 * 2) }.subscribe(subscriber)
        outer.send(1)
        outer.send(2)
        outer.send(3)
        #expect(subscriber.values == [2])
        subscriber.request(.max(1))
        #expect(subscriber.values == [2, 4])
        outer.send(completion: .failure(TestError(code: 5)))
        subscriber.request(.max(1))
        #expect(
            subscriber.history == [.subscription, .value(2), .value(4), .completion(.failure(TestError(code: 5)))]
        )
    }

    @Test func concurrentJustsRequestsAndCancelNeverOverDeliverOrOverlap() {
        for _ in 0..<50 {
            let outer = PassthroughSubject<Int, Never>()
            let subscriber = SerialSubscriber<Int, Never>(initialDemand: .max(1))
            outer.flatMap { Just($0) }.subscribe(subscriber)
            DispatchQueue.concurrentPerform(iterations: 4) { index in
                switch index {
                case 0: for value in 0..<600 { outer.send(value) }
                case 3: subscriber.cancel()
                default: for _ in 0..<40 { subscriber.request(.max(1)) }
                }
            }
            let delivered = subscriber.values.count
            for value in 0..<10 { outer.send(value) }
            subscriber.request(.max(10))
            #expect(delivered <= 81)
            #expect(subscriber.values == Array(0..<delivered))
            #expect(subscriber.completions.isEmpty)
            #expect(subscriber.overlaps == 0)
        }
    }

    @Test func justsSentWhileAnotherThreadRequestsAreEachDeliveredOnceInOrder() {
        let outer = PassthroughSubject<Int, Never>()
        let subscriber = SerialSubscriber<Int, Never>(initialDemand: .max(1))
        outer.flatMap { Just($0) }.subscribe(subscriber)
        DispatchQueue.concurrentPerform(iterations: 3) { index in
            if index == 0 {
                for value in 0..<4_000 { outer.send(value) }
            } else {
                for _ in 0..<1_000 { subscriber.request(.max(1)) }
            }
        }
        #expect(subscriber.values.count <= 2_001)
        subscriber.request(.max(1_999))
        outer.send(completion: .finished)
        #expect(subscriber.waitForCompletion())
        #expect(subscriber.values == Array(0..<4_000))
        #expect(subscriber.completions.count == 1)
        #expect(subscriber.overlaps == 0)
    }

    @Test func failureTypesCombineAsInCombine() {
        let neverNever = Just(1).flatMap { Just($0) }
        let neverFailing = Just(1).flatMap { _ in Fail<Int, TestError>(error: TestError(code: 1)) }
        let failingNever = Fail<Int, TestError>(error: TestError(code: 2)).flatMap { Just($0) }
        let failingFailing = [1].publisher.setFailureType(to: TestError.self).flatMap {
            Fail<Int, TestError>(error: TestError(code: $0))
        }
        #expect(type(of: neverNever) == Publishers.FlatMap<Just<Int>, Just<Int>>.self)
        #expect(
            type(of: neverFailing)
                == Publishers.FlatMap<Fail<Int, TestError>, Publishers.SetFailureType<Just<Int>, TestError>>.self
        )
        #expect(
            type(of: failingNever)
                == Publishers.FlatMap<Publishers.SetFailureType<Just<Int>, TestError>, Fail<Int, TestError>>.self
        )
        let publishers = [
            neverFailing.eraseToAnyPublisher(),
            failingNever.eraseToAnyPublisher(),
            failingFailing.eraseToAnyPublisher(),
        ]
        let outcomes = publishers.map { publisher -> [TrackingSubscriber<Int, TestError>.Event] in
            let subscriber = TrackingSubscriber<Int, TestError>()
            publisher.subscribe(subscriber)
            return subscriber.history
        }
        #expect(
            outcomes == [
                [.subscription, .completion(.failure(TestError(code: 1)))],
                [.subscription, .completion(.failure(TestError(code: 2)))],
                [.subscription, .completion(.failure(TestError(code: 1)))],
            ]
        )
    }

    @Test func describesItselfAsFlatMap() {
        let subscriber = TrackingSubscriber<Int, Never>()
        PassthroughSubject<Int, Never>().flatMap { Just($0) }.subscribe(subscriber)
        #expect((subscriber.subscription as? any CustomStringConvertible)?.description == "FlatMap")
    }

    @Test func concurrentSendsIntoInnersAreSerializedAndCountedExactly() {
        let inners = (0..<4).map { _ in PassthroughSubject<Int, Never>() }
        let subscriber = SerialSubscriber<Int, Never>()
        RangePublisher(0..<4).flatMap { inners[$0] }.subscribe(subscriber)
        DispatchQueue.concurrentPerform(iterations: 4) { index in
            for value in 0..<2_000 { inners[index].send(value) }
            inners[index].send(completion: .finished)
        }
        #expect(subscriber.waitForCompletion())
        #expect(subscriber.values.count == 8_000)
        #expect(subscriber.completions.count == 1)
        #expect(subscriber.overlaps == 0)
    }

    @Test func concurrentSendsRequestsAndCancelNeverOverDeliver() {
        for _ in 0..<20 {
            let inners = (0..<3).map { _ in PassthroughSubject<Int, Never>() }
            let subscriber = SerialSubscriber<Int, Never>(initialDemand: .max(1))
            RangePublisher(0..<3).flatMap { inners[$0] }.subscribe(subscriber)
            DispatchQueue.concurrentPerform(iterations: 6) { index in
                switch index {
                case 0, 1, 2: for value in 0..<300 { inners[index].send(value) }
                case 5: subscriber.cancel()
                default: for _ in 0..<40 { subscriber.request(.max(1)) }
                }
            }
            #expect(subscriber.values.count <= 81)
            #expect(subscriber.completions.isEmpty)
            #expect(subscriber.overlaps == 0)
        }
    }

    // MARK: Justs under unlimited demand (the lock-free path)

    @Test func aJustSentFromInsideReceiveUnderUnlimitedDemandGoesOutAfterThatReceiveReturns() {
        let outer = PassthroughSubject<Int, Never>()
        let log = Log()
        let subscriber = TrackingSubscriber<Int, Never> { _, value in
            log.append("enter \(value)")
            if value == 1 { outer.send(2) }
            log.append("exit \(value)")
            return .none
        }
        outer.flatMap { Just($0) }.subscribe(subscriber)
        outer.send(1)
        outer.send(3)
        #expect(log.all == ["enter 1", "exit 1", "enter 2", "exit 2", "enter 3", "exit 3"])
        outer.send(completion: .finished)
        #expect(subscriber.history == [.subscription, .value(1), .value(2), .value(3), .completion(.finished)])
    }

    @Test func cancelInsideReceiveOfAJustUnderUnlimitedDemandReleasesTheSubscriberWithNoFurtherEvent() {
        weak var weakInner: AnyObject?
        weak var weakSubscriber: TrackingSubscriber<Int, Never>?
        let outer = PassthroughSubject<Int, Never>()
        do {
            let subscriber = TrackingSubscriber<Int, Never> { subscriber, value in
                if value == 2 { subscriber.cancel() }
                return .none
            }
            outer.flatMap { Just($0) }.subscribe(subscriber)
            weakInner = subscriber.subscription as AnyObject?
            weakSubscriber = subscriber
            outer.send(1)
            outer.send(2)
            #expect(subscriber.history == [.subscription, .value(1), .value(2)])
        }
        #expect(weakInner == nil)
        #expect(weakSubscriber == nil)
    }

    @Test func cancelInsideReceiveOfAJustLetsGoOfASubscriberThatKeepsItsSubscription() {
        weak var weakSubscriber: KeepingSubscriber?
        let outer = PassthroughSubject<Int, Never>()
        do {
            let subscriber = KeepingSubscriber()
            outer.flatMap { Just($0) }.subscribe(subscriber)
            weakSubscriber = subscriber
            outer.send(1)
            outer.send(2)
            outer.send(3)
            #expect(subscriber.values == [1, 2])
        }
        #expect(weakSubscriber == nil)
    }

    @Test func cancelWhileJustsGoOutUnderUnlimitedDemandStopsThemAndNothingOverlaps() {
        for _ in 0..<50 {
            let outer = PassthroughSubject<Int, Never>()
            let subscriber = SerialSubscriber<Int, Never>()
            outer.flatMap { Just($0) }.subscribe(subscriber)
            DispatchQueue.concurrentPerform(iterations: 2) { index in
                if index == 0 {
                    for value in 0..<2_000 { outer.send(value) }
                } else {
                    subscriber.cancel()
                }
            }
            let delivered = subscriber.values.count
            for value in 0..<10 { outer.send(value) }
            #expect(subscriber.values == Array(0..<delivered))
            #expect(subscriber.completions.isEmpty)
            #expect(subscriber.overlaps == 0)
        }
    }

    @Test func releasesEverythingAfterFinishing() {
        weak var weakInner: AnyObject?
        let outer = PassthroughSubject<Int, Never>()
        let inner = PassthroughSubject<Int, Never>()
        do {
            let subscriber = TrackingSubscriber<Int, Never>()
            outer.flatMap { _ in inner }.subscribe(subscriber)
            weakInner = subscriber.subscription as AnyObject?
            outer.send(0)
            inner.send(1)
            outer.send(completion: .finished)
            inner.send(completion: .finished)
            #expect(subscriber.completion == .finished)
        }
        #expect(weakInner == nil)
    }

    @Test func releasesEverythingAfterCancel() {
        weak var weakInner: AnyObject?
        weak var weakSubscriber: TrackingSubscriber<Int, Never>?
        let outer = PassthroughSubject<Int, Never>()
        let inner = PassthroughSubject<Int, Never>()
        do {
            let subscriber = TrackingSubscriber<Int, Never>()
            outer.flatMap { _ in inner }.subscribe(subscriber)
            weakInner = subscriber.subscription as AnyObject?
            weakSubscriber = subscriber
            outer.send(0)
            subscriber.cancel()
        }
        #expect(weakInner == nil)
        #expect(weakSubscriber == nil)
    }
}
