import Dispatch
import Reactive
import TestSupport
import Testing

@Suite struct SequenceTests {
    @Test func respectsFiniteDemandAndFinishesRightAfterTheLastElement() {
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(2))
        [1, 2, 3].publisher.subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .value(1), .value(2)])
        subscriber.request(.max(1))
        #expect(subscriber.history == [.subscription, .value(1), .value(2), .value(3), .completion(.finished)])
    }

    @Test func unlimitedDemandDeliversEverything() {
        let subscriber = TrackingSubscriber<Int, Never>()
        (1...5).publisher.subscribe(subscriber)
        #expect(subscriber.values == [1, 2, 3, 4, 5])
        #expect(subscriber.completion == .finished)
    }

    @Test func emptySequenceFinishesOnSubscription() {
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: nil)
        [Int]().publisher.subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .completion(.finished)])
    }

    @Test func demandReturnedFromReceiveIsAdded() {
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(1)) { _, value in
            value < 3 ? .max(1) : .none
        }
        (1...10).publisher.subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .value(1), .value(2), .value(3)])
    }

    @Test func requestInsideReceiveIsPickedUpByTheLoopNotByRecursion() {
        var depth = 0
        var maxDepth = 0
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(1)) { subscriber, _ in
            depth += 1
            maxDepth = max(maxDepth, depth)
            subscriber.request(.max(1))
            depth -= 1
            return .none
        }
        (1...1_000).publisher.subscribe(subscriber)
        #expect(subscriber.values == Array(1...1_000))
        #expect(subscriber.completion == .finished)
        #expect(maxDepth == 1)
    }

    @Test func cancelInsideReceiveStopsDeliveryWithFiniteAndUnlimitedDemand() {
        for demand in [Subscribers.Demand.max(10), .unlimited] {
            let subscriber = TrackingSubscriber<Int, Never>(initialDemand: demand) { subscriber, value in
                if value == 2 { subscriber.cancel() }
                return .none
            }
            (1...5).publisher.subscribe(subscriber)
            #expect(subscriber.history == [.subscription, .value(1), .value(2)])
        }
    }

    @Test func iteratesLazilyOneElementAhead() {
        var pulled = 0
        let sequence = (1...).lazy.map { value -> Int in
            pulled += 1
            return value
        }
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(3))
        sequence.publisher.subscribe(subscriber)
        #expect(subscriber.values == [1, 2, 3])
        #expect(pulled == 4)
        subscriber.cancel()
    }

    @Test func eachSubscriberIteratesAfresh() {
        let publisher = [1, 2].publisher
        let first = TrackingSubscriber<Int, Never>()
        let second = TrackingSubscriber<Int, Never>()
        publisher.subscribe(first)
        publisher.subscribe(second)
        #expect(first.history == second.history)
        #expect(publisher == Publishers.Sequence<[Int], Never>(sequence: [1, 2]))
    }

    @Test func subscriptionIsFreedAfterCompletionAndAfterCancel() {
        weak var finished: AnyObject?
        weak var cancelled: AnyObject?
        do {
            let first = TrackingSubscriber<Int, Never>(initialDemand: .max(1))
            [1, 2].publisher.subscribe(first)
            finished = first.subscription as AnyObject?
            first.request(.max(1))
            let second = TrackingSubscriber<Int, Never>(initialDemand: .max(1))
            [1, 2].publisher.subscribe(second)
            cancelled = second.subscription as AnyObject?
            second.cancel()
        }
        #expect(finished == nil)
        #expect(cancelled == nil)
    }

    @Test func concurrentRequestsNeverOverDeliverAndDeliverSerially() {
        for _ in 0..<20 {
            let subscriber = SerialCheckingSubscriber(initialDemand: .max(1))
            (0..<10_000).publisher.subscribe(subscriber)
            DispatchQueue.concurrentPerform(iterations: 8) { _ in
                for _ in 0..<100 { subscriber.request(.max(1)) }
            }
            #expect(subscriber.report == .init(values: 801, completions: 0, overlaps: 0))
            #expect(subscriber.received == Array(0..<801))
        }
    }

    @Test func concurrentRequestAndCancelCompleteAtMostOnce() {
        for _ in 0..<50 {
            let subscriber = SerialCheckingSubscriber(initialDemand: .max(1))
            (0..<100).publisher.subscribe(subscriber)
            DispatchQueue.concurrentPerform(iterations: 4) { thread in
                for index in 0..<50 {
                    subscriber.request(.max(1))
                    if thread == 3 && index == 25 { subscriber.cancel() }
                }
            }
            let report = subscriber.report
            #expect(report.overlaps == 0)
            #expect(report.completions <= 1)
            #expect(report.values <= 100)
        }
    }
}
