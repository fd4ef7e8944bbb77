import Reactive
import TestSupport
import Testing

@Suite struct SubjectSubscriberTests {
    @Test func publisherSubscribeSubjectForwardsAndCancels() {
        let subject = PassthroughSubject<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>()
        subject.subscribe(subscriber)
        let cancellable = [1, 2, 3].publisher.subscribe(subject)
        #expect(subscriber.history == [.subscription, .value(1), .value(2), .value(3), .completion(.finished)])
        cancellable.cancel()
    }

    @Test func publisherSubscribeSubjectWaitsForDownstreamDemand() {
        let subject = PassthroughSubject<Int, Never>()
        let cancellable = [1, 2, 3].publisher.subscribe(subject)
        let subscriber = TrackingSubscriber<Int, Never>()
        subject.subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .value(1), .value(2), .value(3), .completion(.finished)])
        cancellable.cancel()
    }

    @Test func anySubscriberWrappingASubjectForwards() {
        let subject = PassthroughSubject<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>()
        subject.subscribe(subscriber)
        [1, 2].publisher.subscribe(AnySubscriber(subject))
        #expect(subscriber.history == [.subscription, .value(1), .value(2), .completion(.finished)])
    }
}
