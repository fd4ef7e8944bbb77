import Reactive
import TestSupport
import Testing

@Suite struct ReduceTests {
    @Test func publishesTheFinalResultWhenUpstreamFinishes() {
        let subscriber = TrackingSubscriber<Int, Never>()
        [1, 2, 3, 4].publisher.reduce(0, +).subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .value(10), .completion(.finished)])
    }

    @Test func requestsUnlimitedAndHoldsTheResultUntilDemand() {
        let upstream = DrivenPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: nil)
        upstream.reduce(0, +).subscribe(subscriber)
        #expect(upstream.subscription.history == [.requested(.unlimited)])
        #expect(upstream.send(5) == .none)
        upstream.send(6)
        upstream.send(completion: .finished)
        #expect(subscriber.history == [.subscription])
        subscriber.request(.max(1))
        #expect(subscriber.history == [.subscription, .value(11), .completion(.finished)])
        subscriber.request(.max(1))
        #expect(subscriber.history == [.subscription, .value(11), .completion(.finished)])
    }

    @Test func emptyUpstreamPublishesTheInitialResult() {
        let subscriber = TrackingSubscriber<Int, Never>()
        Empty<Int, Never>().reduce(42, +).subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .value(42), .completion(.finished)])
    }

    @Test func upstreamFailureIsRepublishedWithoutAValue() {
        let subscriber = TrackingSubscriber<Int, OperatorError>()
        Fail<Int, OperatorError>(error: OperatorError()).reduce(0, +).subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .completion(.failure(OperatorError()))])
    }

    @Test func cancelBeforeFinishDeliversNothing() {
        let upstream = DrivenPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>()
        upstream.reduce(0, +).subscribe(subscriber)
        upstream.send(1)
        subscriber.cancel()
        upstream.send(completion: .finished)
        #expect(subscriber.history == [.subscription])
        #expect(upstream.subscription.history == [.requested(.unlimited), .cancelled])
    }

    @Test func tryReduceFailsWithTheThrownErrorAndCancelsUpstream() {
        let upstream = DrivenPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, any Error>()
        upstream.tryReduce(0) { sum, value in
            if value == 3 { throw OperatorError(code: 3) }
            return sum + value
        }
        .subscribe(subscriber)
        upstream.send(1)
        upstream.send(3)
        upstream.send(completion: .finished)
        #expect(subscriber.history.map(\.description) == ["subscription", "failure(OperatorError(3))"])
        #expect(upstream.subscription.history == [.requested(.unlimited), .cancelled])
    }

    @Test func tryReduceSucceeds() {
        let subscriber = TrackingSubscriber<String, any Error>()
        ["a", "b"].publisher.tryReduce("") { $0 + $1 }.subscribe(subscriber)
        #expect(subscriber.history.map(\.description) == ["subscription", "value(ab)", "finished"])
        #expect(subscriber.subscription == nil)
    }

    @Test func releasesEverythingAfterEveryEnding() {
        for ending in StreamEnding.allCases {
            #expect(releases(ending) { $0.reduce(0, +) } == (true, true))
            #expect(releases(ending) { $0.tryReduce(0, +) } == (true, true))
        }
    }

    @Test func racingRequestsAndCancelDeliverAtMostOneValue() {
        for _ in 0..<50 {
            let (report, _) = raceRequestsAgainstCancel((0..<1_000).publisher.reduce(0, +))
            #expect(report.values <= 1)
            #expect(report.completions <= 1)
            #expect(report.overlaps == 0)
            #expect(report.valuesAfterCompletion == 0)
        }
    }

    @Test func racingSendsRequestsAndCancelDeliverAtMostOneValue() {
        for _ in 0..<50 {
            let (report, _) = raceSendsAgainstRequests { $0.reduce(0, +) }
            #expect(report.values <= 1)
            #expect(report.completions <= 1)
            #expect(report.overlaps == 0)
            #expect(report.valuesAfterCompletion == 0)
        }
    }
}
