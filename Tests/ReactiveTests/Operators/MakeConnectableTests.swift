import Reactive
import TestSupport
import Testing

@Suite(.offPool) struct MakeConnectableTests {
    @Test func nothingFlowsUntilConnect() {
        let connectable = [1, 2].publisher.makeConnectable()
        let first = TrackingSubscriber<Int, Never>()
        let second = TrackingSubscriber<Int, Never>()
        connectable.subscribe(first)
        connectable.subscribe(second)
        #expect(first.history == [.subscription])
        let connection = connectable.connect()
        #expect(first.history == [.subscription, .value(1), .value(2), .completion(.finished)])
        #expect(second.history == first.history)
        connection.cancel()
    }

    @Test func copiesShareOneConnection() {
        let subject = PassthroughSubject<Int, Never>()
        let connectable = subject.makeConnectable()
        let copy = connectable
        let subscriber = TrackingSubscriber<Int, Never>()
        copy.subscribe(subscriber)
        let connection = connectable.connect()
        subject.send(1)
        connection.cancel()
        subject.send(2)
        #expect(subscriber.values == [1])
    }
}
