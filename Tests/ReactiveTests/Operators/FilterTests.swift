import Reactive
import TestSupport
import Testing

@Suite struct FilterTests {
    @Test func republishesOnlyMatchingValues() {
        let subscriber = TrackingSubscriber<Int, Never>()
        (1...6).publisher.filter { $0.isMultiple(of: 2) }.subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .value(2), .value(4), .value(6), .completion(.finished)])
    }

    @Test func requestsOneMoreForEveryDroppedValue() {
        let upstream = DrivenPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(1))
        upstream.filter { $0 > 2 }.subscribe(subscriber)
        #expect(upstream.send(1) == .max(1))
        #expect(upstream.send(2) == .max(1))
        #expect(upstream.send(3) == .none)
        #expect(subscriber.history == [.subscription, .value(3)])
        #expect(upstream.subscription.history == [.requested(.max(1))])
    }

    @Test func finiteDemandIsNotUsedUpByDroppedValues() {
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(2))
        (1...10).publisher.filter { $0 > 5 }.subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .value(6), .value(7)])
    }

    @Test func fusedFiltersMustBothMatch() {
        let subscriber = TrackingSubscriber<Int, Never>()
        (1...6).publisher.filter { $0 > 1 }.filter { $0 < 5 }.subscribe(subscriber)
        #expect(subscriber.values == [2, 3, 4])
    }

    @Test func tryFilterDropsRequestsMoreAndFailsOnThrow() {
        let upstream = DrivenPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, any Error>(initialDemand: .max(1))
        upstream.tryFilter { value in
            if value == 4 { throw OperatorError(code: 4) }
            return value.isMultiple(of: 3)
        }
        .subscribe(subscriber)
        #expect(upstream.send(1) == .max(1))
        #expect(upstream.send(3) == .none)
        upstream.send(4)
        #expect(subscriber.history.map(\.description) == ["subscription", "value(3)", "failure(OperatorError(4))"])
        #expect(upstream.subscription.history == [.requested(.max(1)), .cancelled])
    }

    @Test func fusedTryFiltersCompose() {
        let subscriber = TrackingSubscriber<Int, any Error>()
        (1...6).publisher.filter { $0 > 1 }.tryFilter { $0 < 5 }.filter { $0 != 3 }.subscribe(subscriber)
        #expect(subscriber.history.map(\.description) == ["subscription", "value(2)", "value(4)", "finished"])
    }

    @Test func releasesSubscriberAfterEveryEnding() {
        for ending in StreamEnding.allCases {
            #expect(releases(ending) { $0.filter { _ in true } }.subscriberReleased)
            #expect(releases(ending) { $0.tryFilter { _ in true } } == (true, true))
        }
    }

    @Test func racingRequestsAndCancelNeverOverDeliver() {
        for _ in 0..<20 {
            let (report, requested) = raceRequestsAgainstCancel(
                (0..<100_000).publisher.tryFilter { $0.isMultiple(of: 2) }
            )
            #expect(report.values <= requested)
            #expect(report.completions <= 1)
            #expect(report.overlaps == 0)
            #expect(report.valuesAfterCompletion == 0)
        }
    }
}
