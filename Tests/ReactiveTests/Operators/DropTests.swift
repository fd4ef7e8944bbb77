import Reactive
import TestSupport
import Testing

@Suite struct DropTests {
    @Test func omitsTheFirstValues() {
        let subscriber = TrackingSubscriber<Int, Never>()
        [1, 2, 3, 4].publisher.dropFirst(2).subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .value(3), .value(4), .completion(.finished)])
    }

    @Test func defaultDropsOne() {
        let subscriber = TrackingSubscriber<Int, Never>()
        [1, 2].publisher.dropFirst().subscribe(subscriber)
        #expect(subscriber.values == [2])
    }

    @Test func firstRequestGrowsByTheCountAndLaterOnesPassThrough() {
        let upstream = DrivenPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(1))
        upstream.dropFirst(2).subscribe(subscriber)
        #expect(upstream.send(1) == .none)
        #expect(upstream.send(2) == .none)
        upstream.send(3)
        subscriber.request(.max(2))
        #expect(upstream.subscription.history == [.requested(.max(3)), .requested(.max(2))])
        #expect(subscriber.history == [.subscription, .value(3)])
    }

    @Test func unlimitedStaysUnlimited() {
        let upstream = DrivenPublisher<Int, Never>()
        upstream.dropFirst(3).subscribe(TrackingSubscriber<Int, Never>())
        #expect(upstream.subscription.history == [.requested(.unlimited)])
    }

    @Test func passesFailureAndDescribesItself() {
        let subscriber = TrackingSubscriber<Int, OperatorError>()
        Fail<Int, OperatorError>(error: OperatorError()).dropFirst().subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .completion(.failure(OperatorError()))])
        let other = TrackingSubscriber<Int, Never>(initialDemand: nil)
        DrivenPublisher<Int, Never>().dropFirst().subscribe(other)
        #expect(other.subscription.map { "\($0)" } == "Drop")
    }

    @Test func releasesEverythingAfterEveryEnding() {
        for ending in StreamEnding.allCases {
            #expect(releases(ending) { $0.dropFirst(1) } == (true, true))
        }
    }

    @Test func racingRequestsAndCancelNeverOverDeliver() {
        for _ in 0..<20 {
            let (report, requested) = raceRequestsAgainstCancel((0..<100_000).publisher.dropFirst(10))
            #expect(report.values <= requested)
            #expect(report.completions <= 1)
            #expect(report.overlaps == 0)
        }
    }
}

@Suite struct DropWhileTests {
    @Test func omitsValuesUntilThePredicateFails() {
        let subscriber = TrackingSubscriber<Int, Never>()
        [1, 2, 3, 1].publisher.drop { $0 < 3 }.subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .value(3), .value(1), .completion(.finished)])
    }

    @Test func requestsOneMoreForEveryOmittedValue() {
        let upstream = DrivenPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(1))
        upstream.drop { $0 < 3 }.subscribe(subscriber)
        #expect(upstream.send(1) == .max(1))
        #expect(upstream.send(3) == .none)
        #expect(upstream.subscription.history == [.requested(.max(1))])
    }

    @Test func tryDropFailsWithTheThrownErrorAndCancelsUpstream() {
        let upstream = DrivenPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, any Error>()
        upstream.tryDrop { value in
            if value == 2 { throw OperatorError(code: 2) }
            return true
        }
        .subscribe(subscriber)
        #expect(upstream.send(1) == .max(1))
        upstream.send(2)
        #expect(subscriber.history.map(\.description) == ["subscription", "failure(OperatorError(2))"])
        #expect(upstream.subscription.history == [.requested(.unlimited), .cancelled])
    }

    @Test func tryDropStopsAskingOnceItPasses() {
        var calls = 0
        let subscriber = TrackingSubscriber<Int, any Error>()
        [1, 5, 1, 1].publisher.tryDrop { value in
            calls += 1
            return value < 3
        }
        .subscribe(subscriber)
        #expect(
            subscriber.history.map(\.description) == ["subscription", "value(5)", "value(1)", "value(1)", "finished"]
        )
        #expect(calls == 2)
    }

    @Test func releasesAfterEveryEnding() {
        for ending in StreamEnding.allCases {
            #expect(releases(ending) { $0.drop { $0 < 0 } }.subscriberReleased)
            #expect(releases(ending) { $0.tryDrop { $0 < 0 } } == (true, true))
        }
    }

    @Test func racingRequestsAndCancelNeverOverDeliver() {
        for _ in 0..<20 {
            let (report, requested) = raceRequestsAgainstCancel((0..<100_000).publisher.tryDrop { $0 < 100 })
            #expect(report.values <= requested)
            #expect(report.completions <= 1)
            #expect(report.overlaps == 0)
        }
    }
}
