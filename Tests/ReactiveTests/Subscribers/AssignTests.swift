import Reactive
import TestSupport
import Testing

private final class Target {
    var text = ""
    var number = 0
}

private final class Model: ObservableObject {
    @Published var count = 0
    @Published var label = ""
    @Published var mirror = 0
}

@Suite struct AssignTests {
    @Test func assignWritesEveryValueToTheKeyPath() {
        let target = Target()
        let subject = PassthroughSubject<String, Never>()
        let cancellable = subject.assign(to: \.text, on: target)
        subject.send("a")
        #expect(target.text == "a")
        subject.send("b")
        #expect(target.text == "b")
        cancellable.cancel()
        subject.send("c")
        #expect(target.text == "b")
    }

    @Test func assignRequestsUnlimitedAndRetainsTheObjectUntilCompletion() {
        weak var weakTarget: Target?
        let upstream = TrackingSubscription()
        let subscriber: Subscribers.Assign<Target, Int>
        do {
            let target = Target()
            weakTarget = target
            subscriber = Subscribers.Assign(object: target, keyPath: \.number)
        }
        #expect(weakTarget != nil)
        subscriber.receive(subscription: upstream)
        #expect(upstream.history == [.requested(.unlimited)])
        #expect(subscriber.receive(7) == .none)
        #expect(weakTarget?.number == 7)
        subscriber.receive(completion: .finished)
        #expect(weakTarget == nil)
        #expect(subscriber.object == nil)
        #expect(subscriber.receive(8) == .none)
    }

    @Test func cancelReleasesObjectAndCancelsUpstream() {
        weak var weakTarget: Target?
        let upstream = TrackingSubscription()
        let subscriber: Subscribers.Assign<Target, Int>
        do {
            let target = Target()
            weakTarget = target
            subscriber = Subscribers.Assign(object: target, keyPath: \.number)
        }
        subscriber.receive(subscription: upstream)
        subscriber.cancel()
        subscriber.cancel()
        #expect(weakTarget == nil)
        #expect(upstream.history == [.requested(.unlimited), .cancelled])
        #expect(subscriber.description == "Assign Target.")
    }

    @Test func assignToPublishedUpdatesPropertyAndNotifies() {
        let model = Model()
        let changes = TrackingSubscriber<Void, Never>()
        model.objectWillChange.subscribe(changes)
        let values = TrackingSubscriber<Int, Never>()
        model.$count.subscribe(values)
        [1, 2, 3].publisher.assign(to: &model.$count)
        #expect(model.count == 3)
        #expect(values.values == [0, 1, 2, 3])
        #expect(changes.values.count == 3)
    }

    @Test func assignToPublishedIsCancelledWhenTheObjectGoesAway() {
        let subject = PassthroughSubject<String, Never>()
        weak var weakModel: Model?
        let tracking = TrackingSubscriber<String, Never>()
        subject.subscribe(tracking)
        do {
            let model = Model()
            weakModel = model
            subject.assign(to: &model.$label)
            subject.send("x")
            #expect(model.label == "x")
        }
        #expect(weakModel == nil)
        subject.send("y")
        #expect(tracking.values == ["x", "y"])
    }

    @Test func assignToPublishedChainsBetweenProperties() {
        let model = Model()
        model.$count.assign(to: &model.$mirror)
        model.count = 9
        #expect(model.mirror == 9)
    }
}
