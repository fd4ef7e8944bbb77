import Dispatch
import Reactive
import TestSupport
import Testing

private typealias HandPublisher = CombiningTestKit.HandPublisher
private typealias RangePublisher = CombiningTestKit.RangePublisher
private typealias SerialSubscriber = CombiningTestKit.SerialSubscriber

/// A publisher that subscribes its subscribers to `Optional(value).publisher` only when told to
/// (`start`): the child of a `flatMap` whose subscription arrives after `subscribe` returned.
private final class LatePublisher: Publisher, @unchecked Sendable {
    typealias Output = Int
    typealias Failure = Never

    // @unchecked Sendable: `waiting` is guarded by `lock`.
    private let lock = Lock()
    private var waiting: [AnySubscriber<Int, Never>] = []  // Guarded by lock.
    let value: Int

    init(value: Int) {
        self.value = value
    }

    func receive<S: Subscriber>(subscriber: S) where S.Input == Int, S.Failure == Never {
        let erased = AnySubscriber(subscriber)
        lock.withLock { waiting.append(erased) }
    }

    func start() {
        let subscribers = lock.withLock {
            defer { waiting = [] }
            return waiting
        }
        for subscriber in subscribers {
            Optional(value).publisher.subscribe(subscriber)
        }
    }
}

/// A publisher that keeps every subscriber it ever had: it sends `value` and finishes at once,
/// and can later send to its old subscribers again (as a misbehaving publisher might).
private final class HoardingPublisher: Publisher, @unchecked Sendable {
    typealias Output = Int
    typealias Failure = Never

    // @unchecked Sendable: driven from one thread.
    private(set) var subscribers: [AnySubscriber<Int, Never>] = []

    func receive<S: Subscriber>(subscriber: S) where S.Input == Int, S.Failure == Never {
        let erased = AnySubscriber(subscriber)
        subscribers.append(erased)
        erased.receive(subscription: TrackingSubscription())
        _ = erased.receive(subscribers.count * 100)
        erased.receive(completion: .finished)
    }
}

/// The general child path of `flatMap`: inner publishers other than `Just`, which subscribe,
/// deliver and finish inside `subscribe` (a child registers as its subscription arrives, and a
/// child subscriber its publisher let go of serves the next child), or later, from elsewhere.
@Suite(.offPool) struct FlatMapChildPathTests {
    @Test func synchronousChildrenDeliverInOrderAndFinishOnce() {
        let subscriber = TrackingSubscriber<Int, Never>()
        (0..<1_000).publisher.flatMap { Optional($0).publisher }.subscribe(subscriber)
        #expect(subscriber.values == Array(0..<1_000))
        #expect(subscriber.history.filter { if case .completion = $0 { true } else { false } }.count == 1)
        #expect(subscriber.completion == .finished)
    }

    @Test func synchronousChildrenOfSeveralShapesMix() {
        let subscriber = TrackingSubscriber<Int, Never>()
        (0..<9).publisher.flatMap { n -> AnyPublisher<Int, Never> in
            switch n % 3 {
            case 0: Empty().eraseToAnyPublisher()
            case 1: [n, n].publisher.eraseToAnyPublisher()
            default: Optional(n).publisher.eraseToAnyPublisher()
            }
        }.subscribe(subscriber)
        #expect(subscriber.values == [1, 1, 2, 4, 4, 5, 7, 7, 8])
        #expect(subscriber.completion == .finished)
    }

    @Test func synchronousChildrenUnderFiniteDemandWaitAndGoOutInOrder() {
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(2))
        [1, 2, 3, 4].publisher.flatMap { Optional($0 * 10).publisher }.subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .value(10), .value(20)])
        subscriber.request(.max(1))
        #expect(subscriber.values == [10, 20, 30])
        #expect(subscriber.completion == nil)
        subscriber.request(.max(5))
        #expect(
            subscriber.history == [
                .subscription, .value(10), .value(20), .value(30), .value(40), .completion(.finished),
            ]
        )
    }

    @Test func synchronousChildrenAskTheOuterForOneMoreEachUnderMaxPublishers() {
        let outer = HandPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>()
        outer.flatMap(maxPublishers: .max(2)) { Optional($0).publisher }.subscribe(subscriber)
        #expect(outer.subscription?.history == [.requested(.max(2))])
        outer.send(1)
        outer.send(2)
        #expect(outer.subscription?.history == [.requested(.max(2)), .requested(.max(1)), .requested(.max(1))])
        #expect(subscriber.values == [1, 2])
        outer.send(completion: .finished)
        #expect(subscriber.completion == .finished)
    }

    @Test func cancelInsideReceiveOfASynchronousChildStopsEverything() {
        let outer = HandPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never> { subscriber, value in
            if value == 2 { subscriber.cancel() }
            return .none
        }
        outer.flatMap { Optional($0).publisher }.subscribe(subscriber)
        for value in 0..<5 { outer.send(value) }
        #expect(subscriber.values == [0, 1, 2])
        #expect(subscriber.completion == nil)
        #expect(outer.subscription?.isCancelled == true)
    }

    @Test func requestInsideReceiveOfASynchronousChildDoesNotRecurse() {
        let count = 50_000
        let subscriber = SerialSubscriber<Int, Never>(initialDemand: .max(1), demandPerValue: .max(1))
        RangePublisher(0..<count).flatMap { Optional($0).publisher }.subscribe(subscriber)
        #expect(subscriber.values == Array(0..<count))
        #expect(subscriber.completions.count == 1)
        #expect(subscriber.overlaps == 0)
    }

    @Test func aChildWhoseSubscriptionArrivesLaterKeepsTheStreamOpen() {
        let outer = PassthroughSubject<Int, Never>()
        let late = LatePublisher(value: 7)
        let subscriber = TrackingSubscriber<Int, Never>()
        outer.flatMap { n -> AnyPublisher<Int, Never> in
            n == 0 ? late.eraseToAnyPublisher() : Optional(n).publisher.eraseToAnyPublisher()
        }.subscribe(subscriber)
        outer.send(0)
        outer.send(1)
        outer.send(completion: .finished)
        #expect(subscriber.history == [.subscription, .value(1)])  // the late child is still open
        late.start()
        #expect(subscriber.history == [.subscription, .value(1), .value(7), .completion(.finished)])
    }

    @Test func aChildSubscribedFromAnotherThreadIsCountedBeforeTheOuterFinishes() {
        // The outer (a `Just`) finishes right after the child's `subscribe` returns, while the
        // child's subscription arrives from another thread: the stream waits for the child.
        for _ in 0..<300 {
            let subscriber = SerialSubscriber<Int, Never>()
            Just(0).flatMap { _ in Optional(7).publisher.subscribe(on: DispatchQueue.global()) }.subscribe(subscriber)
            #expect(subscriber.waitForCompletion())
            #expect(subscriber.values == [7])
            #expect(subscriber.completions.count == 1)
        }
    }

    @Test func aChildSubscriptionArrivingAfterCancelIsCancelled() {
        let outer = PassthroughSubject<Int, Never>()
        let late = HandPublisher<Int, Never>()
        let holder = LatePublisher(value: 1)
        let subscriber = TrackingSubscriber<Int, Never>()
        outer.flatMap { n -> AnyPublisher<Int, Never> in
            n == 0 ? holder.eraseToAnyPublisher() : late.eraseToAnyPublisher()
        }.subscribe(subscriber)
        outer.send(0)
        subscriber.cancel()
        holder.start()  // the subscription arrives after the cancel: cancelled, nothing delivered
        #expect(subscriber.values == [])
        #expect(subscriber.completion == nil)
    }

    @Test func aChildItsPublisherStillHoldsIsNotReused() {
        let hoarder = HoardingPublisher()
        let live = PassthroughSubject<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>()
        let outer = PassthroughSubject<Int, Never>()
        outer.flatMap { n -> AnyPublisher<Int, Never> in
            n == 0 ? hoarder.eraseToAnyPublisher() : live.eraseToAnyPublisher()
        }.subscribe(subscriber)
        outer.send(0)  // finishes at once, but its publisher keeps the child subscriber
        outer.send(1)  // a child that stays open: it must get a subscriber of its own
        live.send(1)
        _ = hoarder.subscribers[0].receive(5)  // the finished child: dropped, not routed to `live`'s
        live.send(2)
        #expect(subscriber.values == [100, 1, 2])
        live.send(completion: .finished)
        outer.send(completion: .finished)
        #expect(subscriber.completion == .finished)
    }

    @Test func synchronousAndConcurrentChildrenAreEachDeliveredOnce() {
        for round in 0..<4 {
            let count = 2_000
            let subscriber = SerialSubscriber<Int, Never>(
                initialDemand: round.isMultiple(of: 2) ? .unlimited : .max(1),
                demandPerValue: round.isMultiple(of: 2) ? .none : .max(1)
            )
            RangePublisher(0..<count).flatMap { n -> AnyPublisher<Int, Never> in
                switch n % 3 {
                case 0: Optional(n).publisher.eraseToAnyPublisher()
                case 1:
                    Future { promise in DispatchQueue.global().async { promise(.success(n)) } }
                        .eraseToAnyPublisher()
                default: Optional(n).publisher.subscribe(on: DispatchQueue.global()).eraseToAnyPublisher()
                }
            }.subscribe(subscriber)
            #expect(subscriber.waitForCompletion())
            #expect(subscriber.values.sorted() == Array(0..<count))
            #expect(subscriber.completions.count == 1)
            #expect(subscriber.overlaps == 0)
        }
    }

    @Test func releasesEverythingAfterSynchronousChildrenFinish() {
        weak var weakInner: AnyObject?
        weak var weakSubscriber: TrackingSubscriber<Int, Never>?
        do {
            let subscriber = TrackingSubscriber<Int, Never>()
            let outer = PassthroughSubject<Int, Never>()
            outer.flatMap { Optional($0).publisher }.subscribe(subscriber)
            weakInner = subscriber.subscription as AnyObject?
            weakSubscriber = subscriber
            outer.send(1)
            outer.send(2)
            outer.send(completion: .finished)
            #expect(subscriber.history == [.subscription, .value(1), .value(2), .completion(.finished)])
        }
        #expect(weakInner == nil)
        #expect(weakSubscriber == nil)
    }

    @Test func releasesEverythingAfterCancelWithAParkedChild() {
        weak var weakInner: AnyObject?
        let outer = PassthroughSubject<Int, Never>()
        do {
            let subscriber = TrackingSubscriber<Int, Never>()
            outer.flatMap { Optional($0).publisher }.subscribe(subscriber)
            weakInner = subscriber.subscription as AnyObject?
            outer.send(1)
            subscriber.cancel()
        }
        #expect(weakInner == nil)
    }
}
