import Reactive
import TestSupport
import Testing

@Suite struct CollectTests {
    @Test func publishesAllValuesAsOneArray() {
        let subscriber = TrackingSubscriber<[Int], Never>()
        [1, 2, 3].publisher.collect().subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .value([1, 2, 3]), .completion(.finished)])
    }

    @Test func emptyUpstreamPublishesAnEmptyArray() {
        let subscriber = TrackingSubscriber<[Int], Never>()
        Empty<Int, Never>().collect().subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .value([]), .completion(.finished)])
    }

    @Test func requestsUnlimitedAndWaitsForDemand() {
        let upstream = DrivenPublisher<Int, OperatorError>()
        let subscriber = TrackingSubscriber<[Int], OperatorError>(initialDemand: nil)
        upstream.collect().subscribe(subscriber)
        upstream.send(1)
        upstream.send(completion: .finished)
        #expect(upstream.subscription.history == [.requested(.unlimited)])
        #expect(subscriber.history == [.subscription])
        subscriber.request(.max(3))
        #expect(subscriber.history == [.subscription, .value([1]), .completion(.finished)])
    }

    @Test func failureDiscardsTheCollectedValues() {
        let upstream = DrivenPublisher<Int, OperatorError>()
        let subscriber = TrackingSubscriber<[Int], OperatorError>()
        upstream.collect().subscribe(subscriber)
        upstream.send(1)
        upstream.send(completion: .failure(OperatorError()))
        #expect(subscriber.history == [.subscription, .completion(.failure(OperatorError()))])
    }

    @Test func describesItselfAsCollect() {
        let subscriber = TrackingSubscriber<[Int], Never>(initialDemand: nil)
        DrivenPublisher<Int, Never>().collect().subscribe(subscriber)
        #expect(subscriber.subscription.map { "\($0)" } == "Collect")
    }

    @Test func collectsManyValuesInLinearTime() {
        let subscriber = TrackingSubscriber<[Int], Never>()
        (0..<200_000).publisher.collect().subscribe(subscriber)
        #expect(subscriber.values.first?.count == 200_000)
    }

    @Test func releasesEverythingAfterEveryEnding() {
        for ending in StreamEnding.allCases {
            #expect(releases(ending) { $0.collect() } == (true, true))
        }
    }

    @Test func racingSendsRequestsAndCancelDeliverAtMostOneValue() {
        for _ in 0..<50 {
            let (report, _) = raceSendsAgainstRequests { $0.collect() }
            #expect(report.values <= 1)
            #expect(report.completions <= 1)
            #expect(report.overlaps == 0)
        }
    }
}

@Suite struct CollectByCountTests {
    @Test func publishesFullArraysThenTheRestOnFinish() {
        let subscriber = TrackingSubscriber<[Int], Never>()
        [1, 2, 3, 4, 5].publisher.collect(2).subscribe(subscriber)
        #expect(
            subscriber.history == [
                .subscription, .value([1, 2]), .value([3, 4]), .value([5]), .completion(.finished),
            ]
        )
    }

    @Test func multipliesDemandByTheCount() {
        let upstream = DrivenPublisher<Int, OperatorError>()
        let subscriber = TrackingSubscriber<[Int], OperatorError>(initialDemand: .max(2)) { _, _ in .max(1) }
        upstream.collect(3).subscribe(subscriber)
        #expect(upstream.send(1) == .none)
        upstream.send(2)
        #expect(upstream.send(3) == .max(3))
        subscriber.request(.unlimited)
        #expect(upstream.subscription.history == [.requested(.max(6)), .requested(.unlimited)])
        #expect(subscriber.history == [.subscription, .value([1, 2, 3])])
    }

    @Test func failureDiscardsThePartialArray() {
        let upstream = DrivenPublisher<Int, OperatorError>()
        let subscriber = TrackingSubscriber<[Int], OperatorError>()
        upstream.collect(2).subscribe(subscriber)
        upstream.send(1)
        upstream.send(2)
        upstream.send(3)
        upstream.send(completion: .failure(OperatorError()))
        #expect(subscriber.history == [.subscription, .value([1, 2]), .completion(.failure(OperatorError()))])
    }

    @Test func releasesEverythingAfterEveryEnding() {
        for ending in StreamEnding.allCases {
            #expect(releases(ending) { $0.collect(2) } == (true, true))
        }
    }

    @Test func racingRequestsAndCancelNeverOverDeliver() {
        for _ in 0..<20 {
            let (report, requested) = raceRequestsAgainstCancel((0..<100_000).publisher.collect(3))
            #expect(report.values <= requested)
            #expect(report.completions <= 1)
            #expect(report.overlaps == 0)
        }
    }
}
