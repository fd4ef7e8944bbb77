import Dispatch
import Reactive
import TestSupport
import Testing

@Suite struct CurrentValueSubjectTests {
    @Test func replaysCurrentValueToANewSubscriber() {
        let subject = CurrentValueSubject<Int, Never>(1)
        subject.send(2)
        let subscriber = TrackingSubscriber<Int, Never>()
        subject.subscribe(subscriber)
        subject.send(3)
        #expect(subscriber.history == [.subscription, .value(2), .value(3)])
        #expect(subject.value == 3)
    }

    @Test func settingValueSends() {
        let subject = CurrentValueSubject<String, Never>("a")
        let subscriber = TrackingSubscriber<String, Never>()
        subject.subscribe(subscriber)
        subject.value = "b"
        subject.value = "c"
        #expect(subscriber.history == [.subscription, .value("a"), .value("b"), .value("c")])
    }

    @Test func currentValueWaitsForFirstDemand() {
        let subject = CurrentValueSubject<Int, Never>(1)
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: nil)
        subject.subscribe(subscriber)
        #expect(subscriber.history == [.subscription])
        subject.send(2)
        subscriber.request(.max(1))
        #expect(subscriber.history == [.subscription, .value(2)])
    }

    @Test func subscriberWithoutDemandReceivesNewestValueOnNextRequest() {
        let subject = CurrentValueSubject<Int, Never>(0)
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(1))
        subject.subscribe(subscriber)
        subject.send(1)
        subject.send(2)
        subscriber.request(.max(2))
        subject.send(3)
        subject.send(4)
        #expect(subscriber.history == [.subscription, .value(0), .value(2), .value(3)])
    }

    @Test func severalSubscribersWithDifferentDemand() {
        let subject = CurrentValueSubject<Int, Never>(0)
        let one = TrackingSubscriber<Int, Never>(initialDemand: .max(1))
        let three = TrackingSubscriber<Int, Never>(initialDemand: .max(3))
        subject.subscribe(one)
        subject.subscribe(three)
        subject.send(1)
        subject.send(2)
        subject.send(completion: .finished)
        #expect(one.history == [.subscription, .value(0), .completion(.finished)])
        #expect(three.history == [.subscription, .value(0), .value(1), .value(2), .completion(.finished)])
    }

    /// Combine: after completion, setting `value` still stores it (nothing is sent); `send` does not.
    @Test func completionReachesLateSubscribersAndValueStillStores() {
        let subject = CurrentValueSubject<Int, Never>(5)
        subject.send(completion: .finished)
        subject.value = 6
        subject.send(7)
        let late = TrackingSubscriber<Int, Never>()
        subject.subscribe(late)
        #expect(late.history == [.subscription, .completion(.finished)])
        #expect(subject.value == 6)
    }

    @Test func subscriptionsAreFreedAfterCancel() {
        weak var weakSubject: CurrentValueSubject<Int, Never>?
        weak var weakSubscriber: TrackingSubscriber<Int, Never>?
        do {
            let subject = CurrentValueSubject<Int, Never>(0)
            let subscriber = TrackingSubscriber<Int, Never>()
            subject.subscribe(subscriber)
            weakSubject = subject
            weakSubscriber = subscriber
            subscriber.cancel()
        }
        #expect(weakSubject == nil)
        #expect(weakSubscriber == nil)
    }

    @Test func concurrentSendsAreSerializedPerSubscriber() {
        let subject = CurrentValueSubject<Int, Never>(-1)
        let unlimited = SerialCheckingSubscriber(initialDemand: .unlimited)
        let limited = SerialCheckingSubscriber(initialDemand: .max(100))
        subject.subscribe(unlimited)
        subject.subscribe(limited)
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for index in 0..<500 { subject.send(thread * 500 + index) }
        }
        subject.send(completion: .finished)
        #expect(unlimited.report == .init(values: 4_001, completions: 1, overlaps: 0))
        #expect(limited.report == .init(values: 100, completions: 1, overlaps: 0))
    }
}
