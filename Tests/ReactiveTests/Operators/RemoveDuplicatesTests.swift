import Reactive
import TestSupport
import Testing

@Suite struct RemoveDuplicatesTests {
    @Test func dropsConsecutiveDuplicatesOnly() {
        let subscriber = TrackingSubscriber<Int, Never>()
        [1, 1, 2, 2, 3, 1, 1].publisher.removeDuplicates().subscribe(subscriber)
        #expect(
            subscriber.history == [.subscription, .value(1), .value(2), .value(3), .value(1), .completion(.finished)]
        )
    }

    @Test func requestsOneMoreForEveryDuplicate() {
        let upstream = DrivenPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(2))
        upstream.removeDuplicates().subscribe(subscriber)
        #expect(upstream.send(1) == .none)
        #expect(upstream.send(1) == .max(1))
        #expect(upstream.send(2) == .none)
        #expect(subscriber.values == [1, 2])
        #expect(upstream.subscription.history == [.requested(.max(2))])
    }

    @Test func byClosureComparesWithThePreviousPublishedValue() {
        let subscriber = TrackingSubscriber<String, Never>()
        ["a", "A", "b", "B", "a"].publisher.removeDuplicates { $0.lowercased() == $1.lowercased() }
            .subscribe(subscriber)
        #expect(subscriber.values == ["a", "b", "a"])
    }

    @Test func tryRemoveDuplicatesFailsWithTheThrownErrorAndCancelsUpstream() {
        let upstream = DrivenPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, any Error>()
        upstream.tryRemoveDuplicates { previous, next in
            if next == 9 { throw OperatorError(code: 9) }
            return previous == next
        }
        .subscribe(subscriber)
        upstream.send(1)
        #expect(upstream.send(1) == .max(1))
        upstream.send(9)
        #expect(subscriber.history.map(\.description) == ["subscription", "value(1)", "failure(OperatorError(9))"])
        #expect(upstream.subscription.history == [.requested(.unlimited), .cancelled])
    }

    @Test func releasesSubscriberAfterEveryEnding() {
        for ending in StreamEnding.allCases {
            #expect(releases(ending) { $0.removeDuplicates() }.subscriberReleased)
            #expect(releases(ending) { $0.tryRemoveDuplicates(by: ==) } == (true, true))
        }
    }

    @Test func racingRequestsAndCancelNeverOverDeliver() {
        for _ in 0..<20 {
            let (report, requested) = raceRequestsAgainstCancel(
                (0..<100_000).publisher.map { $0 / 2 }.tryRemoveDuplicates(by: ==)
            )
            #expect(report.values <= requested)
            #expect(report.completions <= 1)
            #expect(report.overlaps == 0)
        }
    }
}
