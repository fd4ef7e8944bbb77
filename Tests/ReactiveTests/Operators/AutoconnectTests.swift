import Reactive
import TestSupport
import Testing

private typealias HandPublisher = CombiningTestKit.HandPublisher

@Suite struct AutoconnectTests {
    @Test func connectsOnTheFirstSubscription() {
        let upstream = HandPublisher<Int, Never>()
        let autoconnected = upstream.makeConnectable().autoconnect()
        #expect(upstream.subscriptions.isEmpty)
        let subscriber = TrackingSubscriber<Int, Never>()
        autoconnected.subscribe(subscriber)
        #expect(upstream.subscriptions.count == 1)
        upstream.send(1)
        #expect(subscriber.values == [1])
    }

    @Test func disconnectsWhenTheLastSubscriberCompletes() {
        let upstream = HandPublisher<Int, Never>()
        let autoconnected = upstream.multicast { PassthroughSubject<Int, Never>() }.autoconnect()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(1)) { subscriber, _ in
            subscriber.cancel()
            return .none
        }
        autoconnected.subscribe(subscriber)
        upstream.send(1)
        upstream.send(2)
        #expect(subscriber.values == [1])
        #expect(upstream.subscription?.history == [.requested(.unlimited), .cancelled])
    }

    @Test func passesDemandThrough() {
        let subject = PassthroughSubject<Int, Never>()
        let autoconnected = subject.makeConnectable().autoconnect()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(2))
        autoconnected.subscribe(subscriber)
        for value in 1...4 { subject.send(value) }
        #expect(subscriber.values == [1, 2])
        subscriber.request(.max(1))
        subject.send(5)
        #expect(subscriber.values == [1, 2, 5])
        #expect((subscriber.subscription as? any CustomStringConvertible)?.description == "Autoconnect")
    }

    @Test func releasesTheSubscriberAfterItCancels() {
        weak var weakSubscriber: TrackingSubscriber<Int, Never>?
        weak var weakInner: AnyObject?
        let subject = PassthroughSubject<Int, Never>()
        let autoconnected = subject.makeConnectable().autoconnect()
        do {
            let subscriber = TrackingSubscriber<Int, Never>()
            autoconnected.subscribe(subscriber)
            weakSubscriber = subscriber
            weakInner = subscriber.subscription as AnyObject?
            subscriber.cancel()
        }
        #expect(weakSubscriber == nil)
        #expect(weakInner == nil)
    }
}
