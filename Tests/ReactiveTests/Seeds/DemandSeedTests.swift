import Reactive
import TestSupport
import Testing

@Suite struct DemandSeedTests {
    @Test func filterRequestsOneExtraForEachDroppedValue() {
        let upstream = DrivenPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(2))
        upstream.filter { $0.isMultiple(of: 2) }.subscribe(subscriber)
        let returned = (1...4).map { upstream.send($0) }
        #expect(returned == [.max(1), .none, .max(1), .none])
        #expect(upstream.subscription.history == [.requested(.max(2))])
        #expect(subscriber.values == [2, 4])
    }

    @Test func prefixThreeWithMaxTenDownstream() {
        let upstream = DrivenPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(10))
        upstream.prefix(3).subscribe(subscriber)
        for value in 1...5 { upstream.send(value) }
        #expect(upstream.subscription.history == [.requested(.max(10)), .cancelled])
        #expect(subscriber.history == [.subscription, .value(1), .value(2), .value(3), .completion(.finished)])
    }

    @Test func dropFirstTwoOnMaxOne() {
        let upstream = DrivenPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(1))
        upstream.dropFirst(2).subscribe(subscriber)
        for value in 1...3 { upstream.send(value) }
        #expect(upstream.subscription.history == [.requested(.max(3))])
        #expect(subscriber.history == [.subscription, .value(3)])
    }

    @Test func reducersRequestUnlimitedAndDeliverOnlyOnDemand() {
        let upstream = DrivenPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: nil)
        upstream.count().subscribe(subscriber)
        upstream.send(1)
        upstream.send(completion: .finished)
        #expect(upstream.subscription.history == [.requested(.unlimited)])
        #expect(subscriber.history == [.subscription])
        subscriber.request(.max(1))
        #expect(subscriber.history == [.subscription, .value(1), .completion(.finished)])
    }

    @Test func collectByCountMultipliesDemand() {
        let upstream = DrivenPublisher<Int, Never>()
        upstream.collect(4).subscribe(TrackingSubscriber<[Int], Never>(initialDemand: .max(2)))
        #expect(upstream.subscription.history == [.requested(.max(8))])
    }

    @Test func mapAndScanPassDemandUnchanged() {
        let upstream = DrivenPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(2)) { _, _ in .max(1) }
        upstream.map { $0 }.scan(0, +).subscribe(subscriber)
        #expect(upstream.send(1) == .max(1))
        #expect(upstream.subscription.history == [.requested(.max(2))])
    }
}
