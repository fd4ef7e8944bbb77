import Reactive
import TestSupport
import Testing

@Suite struct ReplaceErrorTests {
    @Test func replacesAFailureWithTheValueAndFinishes() {
        let upstream = DrivenPublisher<Int, OperatorError>()
        let subscriber = TrackingSubscriber<Int, Never>()
        upstream.replaceError(with: 0).subscribe(subscriber)
        upstream.send(1)
        upstream.send(completion: .failure(OperatorError()))
        #expect(subscriber.history == [.subscription, .value(1), .value(0), .completion(.finished)])
    }

    @Test func holdsTheReplacementUntilDownstreamHasDemand() {
        let upstream = DrivenPublisher<Int, OperatorError>()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(1))
        upstream.replaceError(with: 0).subscribe(subscriber)
        upstream.send(1)
        upstream.send(completion: .failure(OperatorError()))
        #expect(subscriber.history == [.subscription, .value(1)])
        subscriber.request(.max(1))
        #expect(subscriber.history == [.subscription, .value(1), .value(0), .completion(.finished)])
        #expect(upstream.subscription.history == [.requested(.max(1))])
    }

    @Test func countsDemandReturnedFromReceive() {
        let upstream = DrivenPublisher<Int, OperatorError>()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(1)) { _, _ in .max(1) }
        upstream.replaceError(with: 0).subscribe(subscriber)
        #expect(upstream.send(1) == .max(1))
        upstream.send(completion: .failure(OperatorError()))
        #expect(subscriber.values == [1, 0])
    }

    @Test func finishingNormallyPassesThrough() {
        let subscriber = TrackingSubscriber<Int, Never>()
        Just(3).setFailureType(to: OperatorError.self).replaceError(with: 0).subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .value(3), .completion(.finished)])
    }

    @Test func releasesEverythingAfterEveryEnding() {
        for ending in StreamEnding.allCases {
            #expect(releases(ending) { $0.replaceError(with: 0) } == (true, true))
        }
    }

    @Test func racingRequestsAndCancelNeverOverDeliver() {
        for _ in 0..<20 {
            let failing = (0..<1_000).publisher.setFailureType(to: OperatorError.self)
                .append(Fail(error: OperatorError()))
            let (report, requested) = raceRequestsAgainstCancel(failing.replaceError(with: -1))
            #expect(report.values <= requested)
            #expect(report.completions <= 1)
            #expect(report.overlaps == 0)
            #expect(report.valuesAfterCompletion == 0)
        }
    }
}

@Suite struct ReplaceEmptyTests {
    @Test func replacesAnEmptyStream() {
        let subscriber = TrackingSubscriber<Int, Never>()
        Empty<Int, Never>().replaceEmpty(with: 7).subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .value(7), .completion(.finished)])
    }

    @Test func leavesANonEmptyStreamAlone() {
        let subscriber = TrackingSubscriber<Int, Never>()
        [1, 2].publisher.replaceEmpty(with: 7).subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .value(1), .value(2), .completion(.finished)])
    }

    @Test func holdsTheReplacementUntilDemandAndPassesFailures() {
        let upstream = DrivenPublisher<Int, OperatorError>()
        let subscriber = TrackingSubscriber<Int, OperatorError>(initialDemand: nil)
        upstream.replaceEmpty(with: 7).subscribe(subscriber)
        upstream.send(completion: .finished)
        #expect(subscriber.history == [.subscription])
        subscriber.request(.max(2))
        #expect(subscriber.history == [.subscription, .value(7), .completion(.finished)])

        let failing = TrackingSubscriber<Int, OperatorError>()
        Fail<Int, OperatorError>(error: OperatorError()).replaceEmpty(with: 7).subscribe(failing)
        #expect(failing.history == [.subscription, .completion(.failure(OperatorError()))])
    }

    @Test func releasesEverythingAfterEveryEnding() {
        for ending in StreamEnding.allCases {
            #expect(releases(ending) { $0.replaceEmpty(with: 0) } == (true, true))
        }
    }

    @Test func racingRequestsAndCancelNeverOverDeliver() {
        for _ in 0..<20 {
            let (report, requested) = raceRequestsAgainstCancel((0..<1_000).publisher.replaceEmpty(with: -1))
            #expect(report.values <= requested)
            #expect(report.completions <= 1)
            #expect(report.overlaps == 0)
        }
    }
}
