import Reactive
import TestSupport
import Testing

@Suite struct CompactMapTests {
    @Test func republishesNonNilResults() {
        let subscriber = TrackingSubscriber<Int, Never>()
        ["1", "x", "3"].publisher.compactMap { Int($0) }.subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .value(1), .value(3), .completion(.finished)])
    }

    @Test func requestsOneMoreForEveryNil() {
        let upstream = DrivenPublisher<String, Never>()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(1))
        upstream.compactMap { Int($0) }.subscribe(subscriber)
        #expect(upstream.send("x") == .max(1))
        #expect(upstream.send("2") == .none)
        #expect(subscriber.values == [2])
    }

    @Test func fusedCompactMapAndMapCompose() {
        let subscriber = TrackingSubscriber<Int, Never>()
        // Two statements: with Combine's specializations (on the sequence publisher and on
        // `CompactMap`), the one-expression chain has too many overloads to type-check in time, in
        // Combine as here.
        let numbers: Publishers.Sequence<[Int], Never> = ["1", "x", "30"].publisher.compactMap { Int($0) }
        numbers.compactMap { $0 > 5 ? $0 : nil }.map { $0 + 1 }.subscribe(subscriber)
        #expect(subscriber.values == [31])
    }

    @Test func tryCompactMapDropsNilsAndFailsOnThrow() {
        let upstream = DrivenPublisher<String, Never>()
        let subscriber = TrackingSubscriber<Int, any Error>(initialDemand: .max(5))
        upstream.tryCompactMap { text -> Int? in
            if text == "!" { throw OperatorError(code: 9) }
            return Int(text)
        }
        .subscribe(subscriber)
        #expect(upstream.send("x") == .max(1))
        upstream.send("4")
        upstream.send("!")
        upstream.send("5")
        #expect(subscriber.history.map(\.description) == ["subscription", "value(4)", "failure(OperatorError(9))"])
        #expect(upstream.subscription.history == [.requested(.max(5)), .cancelled])
    }

    @Test func releasesSubscriberAfterEveryEnding() {
        for ending in StreamEnding.allCases {
            #expect(releases(ending) { $0.compactMap { $0 } }.subscriberReleased)
            #expect(releases(ending) { $0.tryCompactMap { $0 } } == (true, true))
        }
    }

    @Test func racingRequestsAndCancelNeverOverDeliver() {
        for _ in 0..<20 {
            let (report, requested) = raceRequestsAgainstCancel(
                (0..<100_000).publisher.tryCompactMap { $0.isMultiple(of: 3) ? nil : $0 }
            )
            #expect(report.values <= requested)
            #expect(report.completions <= 1)
            #expect(report.overlaps == 0)
        }
    }
}
