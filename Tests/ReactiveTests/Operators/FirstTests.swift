import Reactive
import TestSupport
import Testing

@Suite struct FirstTests {
    @Test func publishesTheFirstValueAndCancelsUpstream() {
        let upstream = DrivenPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>()
        upstream.first().subscribe(subscriber)
        upstream.send(7)
        upstream.send(8)
        #expect(subscriber.history == [.subscription, .value(7), .completion(.finished)])
        #expect(upstream.subscription.history == [.requested(.unlimited), .cancelled])
    }

    @Test func emptyUpstreamFinishesWithoutAValue() {
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: nil)
        Empty<Int, Never>().first().subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .completion(.finished)])
    }

    @Test func holdsTheValueUntilDemand() {
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: nil)
        (1...3).publisher.first().subscribe(subscriber)
        #expect(subscriber.history == [.subscription])
        subscriber.request(.max(1))
        #expect(subscriber.history == [.subscription, .value(1), .completion(.finished)])
    }

    @Test func firstWherePublishesTheFirstMatch() {
        let subscriber = TrackingSubscriber<Int, Never>()
        [1, 2, 3, 4].publisher.first { $0 > 2 }.subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .value(3), .completion(.finished)])
    }

    @Test func tryFirstWhereFailsWithTheThrownError() {
        let subscriber = TrackingSubscriber<Int, any Error>()
        [1, 2].publisher.tryFirst { _ in throw OperatorError(code: 4) }.subscribe(subscriber)
        #expect(subscriber.history.map(\.description) == ["subscription", "failure(OperatorError(4))"])
    }

    @Test func releasesEverythingAfterEveryEnding() {
        for ending in StreamEnding.allCases {
            #expect(releases(ending) { $0.first() } == (true, true))
            #expect(releases(ending) { $0.first { $0 > 9 } } == (true, true))
            #expect(releases(ending) { $0.tryFirst { $0 > 9 } } == (true, true))
        }
    }

    @Test func racingRequestsAndCancelDeliverAtMostOneValue() {
        for _ in 0..<50 {
            let (report, _) = raceRequestsAgainstCancel((0..<1_000).publisher.first { $0 == 500 })
            #expect(report.values <= 1)
            #expect(report.completions <= 1)
            #expect(report.overlaps == 0)
        }
    }
}

@Suite struct LastTests {
    @Test func publishesTheLastValueAfterUpstreamFinishes() {
        let subscriber = TrackingSubscriber<Int, Never>()
        [1, 2, 3].publisher.last().subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .value(3), .completion(.finished)])
    }

    @Test func lastWherePublishesTheLastMatch() {
        let subscriber = TrackingSubscriber<Int, Never>()
        [1, 2, 3].publisher.last { $0 < 3 }.subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .value(2), .completion(.finished)])
    }

    @Test func emptyOrUnmatchedFinishesWithoutAValue() {
        let subscriber = TrackingSubscriber<Int, Never>()
        [1, 2].publisher.last { $0 > 5 }.subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .completion(.finished)])
    }

    @Test func tryLastWhereFailsWithTheThrownErrorAndCancelsUpstream() {
        let upstream = DrivenPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, any Error>()
        upstream.tryLast { value in
            if value == 2 { throw OperatorError(code: 2) }
            return true
        }
        .subscribe(subscriber)
        upstream.send(1)
        upstream.send(2)
        #expect(subscriber.history.map(\.description) == ["subscription", "failure(OperatorError(2))"])
        #expect(upstream.subscription.history == [.requested(.unlimited), .cancelled])
    }

    @Test func releasesEverythingAfterEveryEnding() {
        for ending in StreamEnding.allCases {
            #expect(releases(ending) { $0.last() } == (true, true))
            #expect(releases(ending) { $0.tryLast { $0 > 0 } } == (true, true))
        }
    }

    @Test func racingRequestsAndCancelDeliverAtMostOneValue() {
        for _ in 0..<50 {
            let (report, _) = raceSendsAgainstRequests { $0.last() }
            #expect(report.values <= 1)
            #expect(report.completions <= 1)
            #expect(report.overlaps == 0)
        }
    }
}
