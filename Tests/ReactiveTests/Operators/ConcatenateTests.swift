import Reactive
import TestSupport
import Testing

@Suite struct ConcatenateTests {
    @Test func appendAndPrependKeepTheirOrder() {
        var results: [[Int]] = []
        _ = [2, 3].publisher.append(4, 5).prepend(0, 1).collect().sink { results.append($0) }
        _ = [2].publisher.append([3, 4]).prepend([0, 1]).collect().sink { results.append($0) }
        _ = Just(2).append(Just(3)).prepend(Just(1)).collect().sink { results.append($0) }
        #expect(results == [[0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 4], [1, 2, 3]])
    }

    @Test func suffixIsSubscribedWithTheDemandLeftOver() {
        let prefix = DrivenPublisher<Int, OperatorError>()
        let suffix = DrivenPublisher<Int, OperatorError>()
        let subscriber = TrackingSubscriber<Int, OperatorError>(initialDemand: .max(3)) { _, value in
            value == 1 ? .max(1) : .none
        }
        prefix.append(suffix).subscribe(subscriber)
        #expect(suffix.subscribeCount == 0)
        #expect(prefix.send(1) == .max(1))
        prefix.send(2)
        prefix.send(completion: .finished)
        #expect(suffix.subscription.history == [.requested(.max(2))])
        suffix.send(3)
        subscriber.request(.max(5))
        suffix.send(completion: .finished)
        #expect(prefix.subscription.history == [.requested(.max(3))])
        #expect(suffix.subscription.history == [.requested(.max(2)), .requested(.max(5))])
        #expect(subscriber.history == [.subscription, .value(1), .value(2), .value(3), .completion(.finished)])
    }

    @Test func suffixWithNoDemandLeftIsSubscribedWithoutARequest() {
        let suffix = DrivenPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(1))
        Just(1).append(suffix).subscribe(subscriber)
        #expect(suffix.subscription.history == [])
        subscriber.request(.max(1))
        #expect(suffix.subscription.history == [.requested(.max(1))])
    }

    @Test func prefixFailureSkipsTheSuffix() {
        let suffix = DrivenPublisher<Int, OperatorError>()
        let subscriber = TrackingSubscriber<Int, OperatorError>()
        Fail<Int, OperatorError>(error: OperatorError()).append(suffix).subscribe(subscriber)
        #expect(suffix.subscribeCount == 0)
        #expect(subscriber.history == [.subscription, .completion(.failure(OperatorError()))])
    }

    @Test func cancelReachesTheCurrentUpstreamOnly() {
        let prefix = DrivenPublisher<Int, Never>()
        let suffix = DrivenPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>()
        prefix.append(suffix).subscribe(subscriber)
        prefix.send(completion: .finished)
        subscriber.cancel()
        #expect(prefix.subscription.history == [.requested(.unlimited)])
        #expect(suffix.subscription.history == [.requested(.unlimited), .cancelled])
    }

    @Test func downstreamSeesOneSubscription() {
        let subscriber = TrackingSubscriber<Int, Never>()
        [1].publisher.append([2]).subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .value(1), .value(2), .completion(.finished)])
    }

    @Test func releasesEverythingAfterEveryEnding() {
        for ending in StreamEnding.allCases {
            #expect(releases(ending) { $0.append(Fail(error: OperatorError())) } == (true, true))
            #expect(releases(ending) { Empty().append($0) } == (true, true))
        }
    }

    @Test func racingRequestsAndCancelNeverOverDeliver() {
        for _ in 0..<20 {
            let (report, requested) = raceRequestsAgainstCancel((0..<300).publisher.append(300..<100_000))
            #expect(report.values <= requested)
            #expect(report.completions <= 1)
            #expect(report.overlaps == 0)
            #expect(report.valuesAfterCompletion == 0)
        }
    }
}
