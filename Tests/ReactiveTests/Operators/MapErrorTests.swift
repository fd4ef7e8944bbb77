import Reactive
import TestSupport
import Testing

private struct OtherError: Error, Equatable {
    var wrapped: OperatorError
}

@Suite struct MapErrorTests {
    @Test func convertsTheFailure() {
        let subscriber = TrackingSubscriber<Int, OtherError>()
        Fail<Int, OperatorError>(error: OperatorError(code: 3)).mapError { OtherError(wrapped: $0) }.subscribe(
            subscriber
        )
        #expect(
            subscriber.history == [.subscription, .completion(.failure(OtherError(wrapped: OperatorError(code: 3))))]
        )
    }

    @Test func passesValuesDemandAndFinishThrough() {
        let upstream = DrivenPublisher<Int, OperatorError>()
        let subscriber = TrackingSubscriber<Int, OtherError>(initialDemand: .max(2)) { _, _ in .max(1) }
        upstream.mapError { OtherError(wrapped: $0) }.subscribe(subscriber)
        #expect(upstream.send(1) == .max(1))
        upstream.send(completion: .finished)
        #expect(subscriber.history == [.subscription, .value(1), .completion(.finished)])
        #expect(upstream.subscription.history == [.requested(.max(2))])
    }

    @Test func releasesSubscriberAfterEveryEnding() {
        for ending in StreamEnding.allCases {
            #expect(releases(ending) { $0.mapError { OtherError(wrapped: $0) } }.subscriberReleased)
        }
    }
}

@Suite struct SetFailureTypeTests {
    @Test func changesOnlyTheType() {
        let upstream = DrivenPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, OperatorError>(initialDemand: .max(1))
        upstream.setFailureType(to: OperatorError.self).subscribe(subscriber)
        upstream.send(1)
        upstream.send(completion: .finished)
        #expect(subscriber.history == [.subscription, .value(1), .completion(.finished)])
        #expect(upstream.subscription.history == [.requested(.max(1))])
    }

    @Test func canBeChangedAgain() {
        let publisher: Publishers.SetFailureType<Just<Int>, OtherError> = Just(1)
            .setFailureType(to: OperatorError.self)
            .setFailureType(to: OtherError.self)
        let subscriber = TrackingSubscriber<Int, OtherError>()
        publisher.subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .value(1), .completion(.finished)])
    }

    @Test func releasesSubscriberAfterFinishAndCancel() {
        weak var weakSubscriber: TrackingSubscriber<Int, OperatorError>?
        let upstream = DrivenPublisher<Int, Never>()
        do {
            let subscriber = TrackingSubscriber<Int, OperatorError>()
            weakSubscriber = subscriber
            upstream.setFailureType(to: OperatorError.self).subscribe(subscriber)
            upstream.send(completion: .finished)
        }
        #expect(weakSubscriber == nil)
    }
}

@Suite struct AssertNoFailureTests {
    @Test func republishesEverythingWhenUpstreamDoesNotFail() {
        let subscriber = TrackingSubscriber<Int, Never>()
        [1, 2].publisher.setFailureType(to: OperatorError.self).assertNoFailure("never").subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .value(1), .value(2), .completion(.finished)])
    }

    @Test func releasesSubscriberAfterFinishAndCancel() {
        for ending in [StreamEnding.finish, .cancel] {
            #expect(releases(ending) { $0.assertNoFailure() }.subscriberReleased)
        }
    }
}

@Suite struct BreakpointTests {
    @Test func republishesEverythingWhenNoClosureAsksToStop() {
        var seen: [String] = []
        let subscriber = TrackingSubscriber<Int, Never>()
        [1, 2].publisher
            .breakpoint(
                receiveSubscription: { _ in
                    seen.append("subscription"); return false
                },
                receiveOutput: {
                    seen.append("value \($0)"); return false
                },
                receiveCompletion: { _ in
                    seen.append("completion"); return false
                }
            )
            .breakpointOnError()
            .subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .value(1), .value(2), .completion(.finished)])
        #expect(seen == ["subscription", "value 1", "value 2", "completion"])
    }

    @Test func releasesSubscriberAfterEveryEnding() {
        for ending in [StreamEnding.finish, .cancel] {
            #expect(releases(ending) { $0.breakpoint() }.subscriberReleased)
        }
    }
}
