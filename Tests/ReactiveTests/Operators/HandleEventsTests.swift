import Reactive
import TestSupport
import Testing

@Suite struct HandleEventsTests {
    @Test func runsEachClosureBeforePassingTheEventOn() {
        var events: [String] = []
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(2)) { _, value in
            events.append("downstream \(value)")
            return .none
        }
        [1, 2, 3].publisher
            .handleEvents(
                receiveSubscription: { _ in events.append("subscription") },
                receiveOutput: { events.append("output \($0)") },
                receiveCompletion: { _ in events.append("completion") },
                receiveCancel: { events.append("cancel") },
                receiveRequest: { events.append("request \($0)") }
            )
            .subscribe(subscriber)
        subscriber.cancel()
        subscriber.cancel()
        #expect(
            events == [
                "subscription", "request max(2)", "output 1", "downstream 1", "output 2", "downstream 2", "cancel",
            ]
        )
    }

    @Test func reportsCompletionAndNotCancelAfterIt() {
        var events: [String] = []
        let subscriber = TrackingSubscriber<Int, OperatorError>()
        Fail<Int, OperatorError>(error: OperatorError())
            .handleEvents(receiveCompletion: { events.append("\($0)") }, receiveCancel: { events.append("cancel") })
            .subscribe(subscriber)
        subscriber.cancel()
        #expect(events == ["failure(OperatorError(1))"])
        #expect(subscriber.history == [.subscription, .completion(.failure(OperatorError()))])
    }

    @Test func passesDemandAndCancelUpstream() {
        let upstream = DrivenPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(1)) { _, _ in .max(2) }
        upstream.handleEvents().subscribe(subscriber)
        #expect(upstream.send(1) == .max(2))
        subscriber.cancel()
        #expect(upstream.subscription.history == [.requested(.max(1)), .cancelled])
        #expect(subscriber.subscription == nil)
    }

    @Test func releasesEverythingAfterEveryEnding() {
        for ending in StreamEnding.allCases {
            #expect(releases(ending) { $0.handleEvents(receiveOutput: { _ in }) } == (true, true))
        }
    }

    @Test func racingRequestsAndCancelNeverOverDeliver() {
        for _ in 0..<20 {
            let (report, requested) = raceRequestsAgainstCancel((0..<100_000).publisher.handleEvents())
            #expect(report.values <= requested)
            #expect(report.completions <= 1)
            #expect(report.overlaps == 0)
        }
    }
}
