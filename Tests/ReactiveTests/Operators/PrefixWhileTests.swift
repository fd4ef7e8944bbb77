import Reactive
import TestSupport
import Testing

@Suite struct PrefixWhileTests {
    @Test func publishesWhileThePredicateHoldsThenCancelsAndFinishes() {
        let upstream = DrivenPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(5))
        upstream.prefix { $0 < 3 }.subscribe(subscriber)
        upstream.send(1)
        upstream.send(2)
        upstream.send(3)
        upstream.send(1)
        #expect(subscriber.history == [.subscription, .value(1), .value(2), .completion(.finished)])
        #expect(upstream.subscription.history == [.requested(.max(5)), .cancelled])
    }

    @Test func tryPrefixFailsWithTheThrownError() {
        let subscriber = TrackingSubscriber<Int, any Error>()
        [1, 2, 3].publisher.tryPrefix { value in
            if value == 2 { throw OperatorError(code: 2) }
            return true
        }
        .subscribe(subscriber)
        #expect(subscriber.history.map(\.description) == ["subscription", "value(1)", "failure(OperatorError(2))"])
    }

    @Test func tryPrefixFinishesWhenThePredicateFails() {
        let subscriber = TrackingSubscriber<Int, any Error>()
        [1, 2, 3].publisher.tryPrefix { $0 < 2 }.subscribe(subscriber)
        #expect(subscriber.history.map(\.description) == ["subscription", "value(1)", "finished"])
    }

    @Test func releasesEverythingAfterEveryEnding() {
        for ending in StreamEnding.allCases {
            #expect(releases(ending) { $0.prefix { $0 < 5 } } == (true, true))
            #expect(releases(ending) { $0.tryPrefix { $0 > 5 } } == (true, true))
        }
    }

    @Test func racingRequestsAndCancelNeverOverDeliver() {
        for _ in 0..<20 {
            let (report, requested) = raceRequestsAgainstCancel((0..<100_000).publisher.prefix { $0 < 300 })
            #expect(report.values <= requested)
            #expect(report.completions <= 1)
            #expect(report.overlaps == 0)
        }
    }
}
