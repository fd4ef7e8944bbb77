import Reactive
import TestSupport
import Testing

@Suite struct ScanTests {
    @Test func publishesRunningResults() {
        let subscriber = TrackingSubscriber<Int, Never>()
        [1, 2, 3, 4].publisher.scan(0, +).subscribe(subscriber)
        #expect(
            subscriber.history == [.subscription, .value(1), .value(3), .value(6), .value(10), .completion(.finished)]
        )
    }

    @Test func passesDemandThroughUnchanged() {
        let upstream = DrivenPublisher<Int, OperatorError>()
        let subscriber = TrackingSubscriber<Int, OperatorError>(initialDemand: .max(2)) { _, _ in .max(1) }
        upstream.scan(10, +).subscribe(subscriber)
        #expect(upstream.send(1) == .max(1))
        upstream.send(completion: .failure(OperatorError()))
        #expect(subscriber.history == [.subscription, .value(11), .completion(.failure(OperatorError()))])
        #expect(upstream.subscription.history == [.requested(.max(2))])
    }

    @Test func eachSubscriptionStartsFromTheInitialResult() {
        let scanned = [1, 2].publisher.scan(100, +)
        var first: [Int] = []
        var second: [Int] = []
        _ = scanned.sink { first.append($0) }
        _ = scanned.sink { second.append($0) }
        #expect(first == [101, 103])
        #expect(second == [101, 103])
    }

    @Test func tryScanFailsWithTheThrownErrorAndCancelsUpstream() {
        let upstream = DrivenPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, any Error>()
        upstream.tryScan(0) { sum, value in
            if value < 0 { throw OperatorError(code: value) }
            return sum + value
        }
        .subscribe(subscriber)
        upstream.send(1)
        upstream.send(2)
        upstream.send(-5)
        upstream.send(3)
        #expect(
            subscriber.history.map(\.description) == [
                "subscription", "value(1)", "value(3)", "failure(OperatorError(-5))",
            ]
        )
        #expect(upstream.subscription.history == [.requested(.unlimited), .cancelled])
    }

    @Test func releasesSubscriberAfterEveryEnding() {
        for ending in StreamEnding.allCases {
            #expect(releases(ending) { $0.scan(0, +) }.subscriberReleased)
            #expect(releases(ending) { $0.tryScan(0, +) } == (true, true))
        }
    }

    @Test func racingRequestsAndCancelNeverOverDeliver() {
        for _ in 0..<20 {
            let (report, requested) = raceRequestsAgainstCancel((0..<100_000).publisher.tryScan(0, +))
            #expect(report.values <= requested)
            #expect(report.completions <= 1)
            #expect(report.overlaps == 0)
        }
    }
}
