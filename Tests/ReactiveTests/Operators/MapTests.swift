import Reactive
import TestSupport
import Testing

@Suite struct MapTests {
    @Test func transformsEveryValueAndPassesCompletion() {
        let subscriber = TrackingSubscriber<String, Never>()
        [1, 2, 3].publisher.map { "#\($0)" }.subscribe(subscriber)
        #expect(
            subscriber.history == [.subscription, .value("#1"), .value("#2"), .value("#3"), .completion(.finished)]
        )
    }

    @Test func handsUpstreamSubscriptionThroughAndReturnsDownstreamDemand() {
        let upstream = DrivenPublisher<Int, OperatorError>()
        let subscriber = TrackingSubscriber<Int, OperatorError>(initialDemand: .max(2)) { _, _ in .max(3) }
        upstream.map { $0 * 2 }.subscribe(subscriber)
        #expect(subscriber.subscription as? TrackingSubscription === upstream.subscription)
        #expect(upstream.send(5) == .max(3))
        upstream.send(completion: .failure(OperatorError()))
        #expect(subscriber.history == [.subscription, .value(10), .completion(.failure(OperatorError()))])
        #expect(upstream.subscription.history == [.requested(.max(2))])
    }

    @Test func fusedMapsComposeInOrder() {
        let subscriber = TrackingSubscriber<Int, Never>()
        [1, 2].publisher.map { $0 + 1 }.map { $0 * 10 }.subscribe(subscriber)
        #expect(subscriber.values == [20, 30])
    }

    @Test func tryMapFailsWithTheThrownErrorAndCancelsUpstream() {
        let upstream = DrivenPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, any Error>()
        upstream.tryMap { value -> Int in
            if value == 2 { throw OperatorError(code: 2) }
            return value * 10
        }
        .subscribe(subscriber)
        upstream.send(1)
        upstream.send(2)
        upstream.send(3)
        #expect(subscriber.history.map(\.description) == ["subscription", "value(10)", "failure(OperatorError(2))"])
        #expect(upstream.subscription.history == [.requested(.unlimited), .cancelled])
    }

    @Test func tryMapPassesUpstreamFailureAsAnyError() {
        let subscriber = TrackingSubscriber<Int, any Error>()
        Fail<Int, OperatorError>(error: OperatorError(code: 7)).tryMap { $0 }.subscribe(subscriber)
        #expect(subscriber.history.map(\.description) == ["subscription", "failure(OperatorError(7))"])
    }

    @Test func tryMapCancelInsideReceiveStopsDelivery() {
        let subscriber = TrackingSubscriber<Int, any Error> { subscriber, _ in
            subscriber.cancel()
            return .none
        }
        (1...5).publisher.tryMap { $0 }.subscribe(subscriber)
        #expect(subscriber.history.map(\.description) == ["subscription", "value(1)"])
    }

    @Test func tryMapDescribesItselfAndPassesDemand() {
        let upstream = DrivenPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, any Error>(initialDemand: .max(1)) { _, _ in .max(2) }
        upstream.tryMap { $0 }.subscribe(subscriber)
        #expect(subscriber.subscription.map { "\($0)" } == "TryMap")
        #expect(upstream.send(1) == .max(2))
        subscriber.request(.max(4))
        #expect(upstream.subscription.history == [.requested(.max(1)), .requested(.max(4))])
    }

    @Test func fusedTryMapsFailFromEitherStage() {
        let subscriber = TrackingSubscriber<Int, any Error>()
        [1, 2].publisher.map { $0 + 1 }.tryMap { value -> Int in
            if value == 3 { throw OperatorError(code: 3) }
            return value
        }
        .map { $0 * 10 }
        .subscribe(subscriber)
        #expect(subscriber.history.map(\.description) == ["subscription", "value(20)", "failure(OperatorError(3))"])
    }

    @Test func replaceNilSubstitutesTheValue() {
        let subscriber = TrackingSubscriber<Int, Never>()
        [1, nil, 3].publisher.replaceNil(with: 0).subscribe(subscriber)
        #expect(subscriber.values == [1, 0, 3])
    }

    @Test func releasesSubscriberAfterEveryEnding() {
        for ending in StreamEnding.allCases {
            #expect(releases(ending) { $0.map { $0 + 1 } }.subscriberReleased)
            #expect(releases(ending) { $0.tryMap { $0 + 1 } } == (true, true))
        }
    }

    @Test func racingRequestsAndCancelNeverOverDeliver() {
        for _ in 0..<20 {
            let (report, requested) = raceRequestsAgainstCancel((0..<100_000).publisher.tryMap { $0 })
            #expect(report.values <= requested)
            #expect(report.completions <= 1)
            #expect(report.overlaps == 0)
            #expect(report.valuesAfterCompletion == 0)
        }
    }
}

@Suite struct MapKeyPathTests {
    private struct Point {
        var x: Int
        var y: Int
        var name: String
    }

    @Test func publishesOneTwoAndThreeKeyPaths() {
        let points = [Point(x: 1, y: 2, name: "a"), Point(x: 3, y: 4, name: "b")]
        var one: [Int] = []
        var two: [String] = []
        var three: [String] = []
        _ = points.publisher.map(\.x).sink { one.append($0) }
        _ = points.publisher.map(\.x, \.y).sink { two.append("\($0.0),\($0.1)") }
        _ = points.publisher.map(\.x, \.y, \.name).sink { three.append("\($0.0),\($0.1),\($0.2)") }
        #expect(one == [1, 3])
        #expect(two == ["1,2", "3,4"])
        #expect(three == ["1,2,a", "3,4,b"])
    }

    @Test func passesDemandAndCompletionThrough() {
        let upstream = DrivenPublisher<String, OperatorError>()
        let subscriber = TrackingSubscriber<Int, OperatorError>(initialDemand: .max(1))
        upstream.map(\.count).subscribe(subscriber)
        upstream.send("abc")
        upstream.send(completion: .failure(OperatorError()))
        #expect(subscriber.history == [.subscription, .value(3), .completion(.failure(OperatorError()))])
        #expect(upstream.subscription.history == [.requested(.max(1))])
    }

    @Test func releasesSubscriberAfterEveryEnding() {
        for ending in StreamEnding.allCases {
            #expect(releases(ending) { $0.map(\.bitWidth) }.subscriberReleased)
            #expect(releases(ending) { $0.map(\.bitWidth, \.magnitude) }.subscriberReleased)
        }
    }
}
