import Reactive
import TestSupport
import Testing

// The Fibonacci publisher exactly as a Combine user writes one: a `Subscription` class whose
// `request(_:)` adds to its demand and loops while demand remains, guarding against re-entrant
// calls, with wrapping arithmetic and an optional count.
private struct FibonacciPublisher: Publisher {
    typealias Output = Int
    typealias Failure = Never

    var count: Int?

    func receive<S: Subscriber>(subscriber: S) where S.Input == Int, S.Failure == Never {
        subscriber.receive(subscription: FibonacciSubscription(subscriber: subscriber, count: count))
    }
}

private final class FibonacciSubscription<S: Subscriber>: Subscription where S.Input == Int, S.Failure == Never {
    private var subscriber: S?
    private let count: Int?
    private var demand = Subscribers.Demand.none
    private var emitted = 0
    private var current = 0
    private var next = 1
    private var isEmitting = false

    init(subscriber: S, count: Int?) {
        self.subscriber = subscriber
        self.count = count
    }

    func request(_ demand: Subscribers.Demand) {
        self.demand += demand
        guard !isEmitting else { return }
        isEmitting = true
        defer { isEmitting = false }
        while self.demand > 0, let subscriber {
            if let count, emitted >= count {
                self.subscriber = nil
                subscriber.receive(completion: .finished)
                return
            }
            self.demand -= 1
            let value = current
            (current, next) = (next, current &+ next)
            emitted += 1
            self.demand += subscriber.receive(value)
        }
    }

    func cancel() {
        subscriber = nil
    }
}

// The naive version with the classic re-entrancy bug shape: no guard, so a `request` made from
// inside `receive` starts a nested delivery loop.
private final class NaiveFibonacci: Publisher {
    typealias Output = Int
    typealias Failure = Never

    var depth = 0
    var maxDepth = 0
    var cancelled = false

    func receive<S: Subscriber>(subscriber: S) where S.Input == Int, S.Failure == Never {
        subscriber.receive(subscription: Subscription(owner: self, subscriber: subscriber))
    }

    private final class Subscription<S: Subscriber>: Reactive.Subscription where S.Input == Int {
        let owner: NaiveFibonacci
        var subscriber: S?
        var demand = Subscribers.Demand.none
        var current = 0
        var next = 1

        init(owner: NaiveFibonacci, subscriber: S) {
            self.owner = owner
            self.subscriber = subscriber
        }

        func request(_ demand: Subscribers.Demand) {
            owner.depth += 1
            owner.maxDepth = Swift.max(owner.maxDepth, owner.depth)
            defer { owner.depth -= 1 }
            self.demand += demand
            while self.demand > 0, let subscriber {
                self.demand -= 1
                let value = current
                (current, next) = (next, current &+ next)
                self.demand += subscriber.receive(value)
            }
        }

        func cancel() {
            owner.cancelled = true
            subscriber = nil
        }
    }
}

@Suite struct FibonacciSeedTests {
    @Test func sinkReceivesTheFirstTenValues() {
        var values: [Int] = []
        var finished = 0
        _ = FibonacciPublisher(count: 10).sink(
            receiveCompletion: { _ in finished += 1 },
            receiveValue: { values.append($0) }
        )
        #expect(values == [0, 1, 1, 2, 3, 5, 8, 13, 21, 34])
        #expect(finished == 1)
    }

    @Test func prefixFiveOfAnEndlessCountCancelsCleanly() {
        let subscriber = TrackingSubscriber<Int, Never>()
        FibonacciPublisher(count: nil).prefix(5).subscribe(subscriber)
        #expect(
            subscriber.history == [
                .subscription, .value(0), .value(1), .value(1), .value(2), .value(3), .completion(.finished),
            ]
        )
    }

    @Test func wrappingArithmeticNeverTraps() {
        var last = 0
        var count = 0
        _ = FibonacciPublisher(count: nil).prefix(200).sink { value in
            last = value
            count += 1
        }
        #expect(count == 200)
        #expect(last != 0)
    }

    @Test func customSubscriberAskingForThreeGetsThreeAndNothingMore() {
        final class ThreeSubscriber: Subscriber {
            typealias Input = Int
            typealias Failure = Never
            var received: [Int] = []
            var completions = 0

            func receive(subscription: any Subscription) {
                subscription.request(.max(3))
            }

            func receive(_ input: Int) -> Subscribers.Demand {
                received.append(input)
                return .none
            }

            func receive(completion: Subscribers.Completion<Never>) {
                completions += 1
            }
        }
        let subscriber = ThreeSubscriber()
        FibonacciPublisher(count: nil).subscribe(subscriber)
        #expect(subscriber.received == [0, 1, 1])
        #expect(subscriber.completions == 0)
        let throughOperators = ThreeSubscriber()
        FibonacciPublisher(count: nil).map { $0 }.filter { _ in true }.prefix(10).subscribe(throughOperators)
        #expect(throughOperators.received == [0, 1, 1])
    }

    @Test func oneAtATimeThroughOperatorsStaysFlat() {
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(1)) { _, _ in .max(1) }
        FibonacciPublisher(count: nil).map { $0 }.scan(0) { $1 }.prefix(8).subscribe(subscriber)
        #expect(subscriber.values == [0, 1, 1, 2, 3, 5, 8, 13])
        #expect(subscriber.completion == .finished)
    }

    @Test func naivePublisherWithRequestInsideReceiveStillStopsAtThePrefix() {
        let upstream = NaiveFibonacci()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(1)) { subscriber, _ in
            subscriber.request(.max(1))
            return .none
        }
        upstream.prefix(5).subscribe(subscriber)
        #expect(
            subscriber.history == [
                .subscription, .value(0), .value(1), .value(1), .value(2), .value(3), .completion(.finished),
            ]
        )
        #expect(upstream.cancelled)
        // The publisher's own nesting, one level per value, and no more: prefix adds none.
        #expect(upstream.maxDepth <= 5)
    }

    @Test func naivePublisherWithUnlimitedDemandStopsAtThePrefix() {
        let upstream = NaiveFibonacci()
        var values: [Int] = []
        _ = upstream.prefix(5).sink { values.append($0) }
        #expect(values == [0, 1, 1, 2, 3])
        #expect(upstream.cancelled)
        #expect(upstream.maxDepth == 1)
    }
}
