import Reactive
import TestSupport
import Testing

@Suite struct ComparisonTests {
    @Test func minAndMaxOfComparableValues() {
        var results: [Int] = []
        _ = [3, 1, 2].publisher.min().sink { results.append($0) }
        _ = [3, 1, 2].publisher.max().sink { results.append($0) }
        #expect(results == [1, 3])
    }

    @Test func byClosureKeepsTheFirstOfEqualElements() {
        let words = ["bb", "a", "c", "dd"]
        var results: [String] = []
        _ = words.publisher.min { $0.count < $1.count }.sink { results.append($0) }
        _ = words.publisher.max { $0.count < $1.count }.sink { results.append($0) }
        #expect(results == ["a", "bb"])
    }

    @Test func emptyUpstreamFinishesWithoutAValue() {
        let subscriber = TrackingSubscriber<Int, Never>()
        Empty<Int, Never>().max().subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .completion(.finished)])
    }

    @Test func requestsUnlimitedAndWaitsForDemand() {
        let upstream = DrivenPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: nil)
        upstream.min().subscribe(subscriber)
        upstream.send(4)
        upstream.send(2)
        upstream.send(completion: .finished)
        #expect(upstream.subscription.history == [.requested(.unlimited)])
        subscriber.request(.max(1))
        #expect(subscriber.history == [.subscription, .value(2), .completion(.finished)])
    }

    @Test func tryMinAndTryMaxFailWithTheThrownError() {
        let subscriber = TrackingSubscriber<Int, any Error>()
        [1, 2].publisher.tryMin { _, _ in throw OperatorError(code: 8) }.subscribe(subscriber)
        #expect(subscriber.history.map(\.description) == ["subscription", "failure(OperatorError(8))"])
        let other = TrackingSubscriber<Int, any Error>()
        [1, 3, 2].publisher.tryMax { $0 < $1 }.subscribe(other)
        #expect(other.history.map(\.description) == ["subscription", "value(3)", "finished"])
    }

    @Test func releasesEverythingAfterEveryEnding() {
        for ending in StreamEnding.allCases {
            #expect(releases(ending) { $0.min() } == (true, true))
            #expect(releases(ending) { $0.tryMax(by: <) } == (true, true))
        }
    }

    @Test func racingRequestsAndCancelDeliverAtMostOneValue() {
        for _ in 0..<50 {
            let (report, _) = raceRequestsAgainstCancel((0..<1_000).publisher.max())
            #expect(report.values <= 1)
            #expect(report.completions <= 1)
            #expect(report.overlaps == 0)
        }
    }
}
