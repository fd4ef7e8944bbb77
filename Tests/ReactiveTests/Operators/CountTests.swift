import Reactive
import TestSupport
import Testing

@Suite struct CountTests {
    @Test func publishesTheNumberOfValues() {
        let subscriber = TrackingSubscriber<Int, Never>()
        ["a", "b", "c"].publisher.count().subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .value(3), .completion(.finished)])
    }

    @Test func emptyUpstreamCountsZero() {
        let subscriber = TrackingSubscriber<Int, Never>()
        Empty<Int, Never>().count().subscribe(subscriber)
        #expect(subscriber.values == [0])
    }

    @Test func holdsTheCountUntilDemand() {
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: nil)
        [1, 2].publisher.count().subscribe(subscriber)
        #expect(subscriber.history == [.subscription])
        subscriber.request(.max(1))
        #expect(subscriber.history == [.subscription, .value(2), .completion(.finished)])
    }

    @Test func releasesEverythingAfterEveryEnding() {
        for ending in StreamEnding.allCases {
            #expect(releases(ending) { $0.count() } == (true, true))
        }
    }

    @Test func racingRequestsAndCancelDeliverAtMostOneValue() {
        for _ in 0..<50 {
            let (report, _) = raceRequestsAgainstCancel((0..<1_000).publisher.count())
            #expect(report.values <= 1)
            #expect(report.completions <= 1)
            #expect(report.overlaps == 0)
        }
    }
}

@Suite struct IgnoreOutputTests {
    @Test func passesOnlyTheCompletion() {
        let subscriber = TrackingSubscriber<Never, OperatorError>()
        let upstream = DrivenPublisher<Int, OperatorError>()
        upstream.ignoreOutput().subscribe(subscriber)
        #expect(upstream.send(1) == .none)
        upstream.send(completion: .failure(OperatorError()))
        #expect(subscriber.history.map(\.description) == ["subscription", "failure(OperatorError(1))"])
        #expect(upstream.subscription.history == [.requested(.unlimited)])
    }

    @Test func finishesWithoutDemand() {
        let subscriber = TrackingSubscriber<Never, Never>(initialDemand: nil)
        [1, 2].publisher.ignoreOutput().subscribe(subscriber)
        #expect(subscriber.history.map(\.description) == ["subscription", "finished"])
    }

    @Test func releasesEverythingAfterEveryEnding() {
        for ending in StreamEnding.allCases {
            #expect(releases(ending) { $0.ignoreOutput() } == (true, true))
        }
    }
}
