import Reactive
import TestSupport
import Testing

@Suite struct ContainsTests {
    @Test func publishesTrueAndCancelsUpstreamOnAMatch() {
        let upstream = DrivenPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Bool, Never>()
        upstream.contains(2).subscribe(subscriber)
        upstream.send(1)
        upstream.send(2)
        upstream.send(3)
        #expect(subscriber.history == [.subscription, .value(true), .completion(.finished)])
        #expect(upstream.subscription.history == [.requested(.unlimited), .cancelled])
    }

    @Test func publishesFalseWhenUpstreamFinishesWithoutAMatch() {
        let subscriber = TrackingSubscriber<Bool, Never>()
        [1, 2].publisher.contains(5).subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .value(false), .completion(.finished)])
    }

    @Test func holdsAnEarlyMatchUntilDemand() {
        let upstream = DrivenPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Bool, Never>(initialDemand: nil)
        upstream.contains { $0 > 1 }.subscribe(subscriber)
        upstream.send(2)
        #expect(upstream.subscription.history == [.requested(.unlimited), .cancelled])
        #expect(subscriber.history == [.subscription])
        subscriber.request(.max(1))
        #expect(subscriber.history == [.subscription, .value(true), .completion(.finished)])
    }

    @Test func tryContainsFailsWithTheThrownError() {
        let subscriber = TrackingSubscriber<Bool, any Error>()
        [1, 2, 3].publisher.tryContains { value in
            if value == 2 { throw OperatorError(code: 2) }
            return false
        }
        .subscribe(subscriber)
        #expect(subscriber.history.map(\.description) == ["subscription", "failure(OperatorError(2))"])
    }

    @Test func tryContainsFindsAMatch() {
        let subscriber = TrackingSubscriber<Bool, any Error>()
        [1, 2, 3].publisher.tryContains { $0 == 3 }.subscribe(subscriber)
        #expect(subscriber.history.map(\.description) == ["subscription", "value(true)", "finished"])
    }

    @Test func releasesEverythingAfterEveryEnding() {
        for ending in StreamEnding.allCases {
            #expect(releases(ending) { $0.contains(1) } == (true, true))
            #expect(releases(ending) { $0.contains { $0 > 5 } } == (true, true))
            #expect(releases(ending) { $0.tryContains { $0 > 5 } } == (true, true))
        }
    }

    @Test func racingRequestsAndCancelDeliverAtMostOneValue() {
        for _ in 0..<50 {
            let (report, _) = raceRequestsAgainstCancel((0..<1_000).publisher.contains(999))
            #expect(report.values <= 1)
            #expect(report.completions <= 1)
            #expect(report.overlaps == 0)
        }
    }
}

@Suite struct AllSatisfyTests {
    @Test func publishesTrueWhenEveryValuePasses() {
        let subscriber = TrackingSubscriber<Bool, Never>()
        [2, 4].publisher.allSatisfy { $0.isMultiple(of: 2) }.subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .value(true), .completion(.finished)])
    }

    @Test func publishesFalseAndCancelsUpstreamAtTheFirstMiss() {
        let upstream = DrivenPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Bool, Never>()
        upstream.allSatisfy { $0 < 3 }.subscribe(subscriber)
        upstream.send(1)
        upstream.send(3)
        #expect(subscriber.history == [.subscription, .value(false), .completion(.finished)])
        #expect(upstream.subscription.history == [.requested(.unlimited), .cancelled])
    }

    @Test func tryAllSatisfyFailsWithTheThrownError() {
        let subscriber = TrackingSubscriber<Bool, any Error>()
        [1, 2].publisher.tryAllSatisfy { _ in throw OperatorError(code: 5) }.subscribe(subscriber)
        #expect(subscriber.history.map(\.description) == ["subscription", "failure(OperatorError(5))"])
    }

    @Test func releasesEverythingAfterEveryEnding() {
        for ending in StreamEnding.allCases {
            #expect(releases(ending) { $0.allSatisfy { $0 > 0 } } == (true, true))
            #expect(releases(ending) { $0.tryAllSatisfy { $0 > 0 } } == (true, true))
        }
    }

    @Test func racingRequestsAndCancelDeliverAtMostOneValue() {
        for _ in 0..<50 {
            let (report, _) = raceRequestsAgainstCancel((0..<1_000).publisher.allSatisfy { $0 < 999 })
            #expect(report.values <= 1)
            #expect(report.completions <= 1)
            #expect(report.overlaps == 0)
        }
    }
}
