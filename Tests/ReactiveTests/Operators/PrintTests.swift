import Reactive
import TestSupport
import Testing

@Suite struct PrintTests {
    @Test func logsEveryEventInCombinesFormat() {
        let stream = RecordingStream()
        let subscriber = TrackingSubscriber<Int, Never>()
        Just(1).print("just", to: ForwardingStream(target: stream)).subscribe(subscriber)
        #expect(
            stream.text == """
                just: receive subscription: (Just)
                just: request unlimited
                just: receive value: (1)
                just: receive finished

                """
        )
        #expect(subscriber.history == [.subscription, .value(1), .completion(.finished)])
    }

    @Test func writesTheLineAndTheNewlineSeparately() {
        let stream = RecordingStream()
        _ = Just(1).print(to: ForwardingStream(target: stream)).sink { _ in }
        #expect(
            stream.calls == [
                "receive subscription: (Just)", "\n", "request unlimited", "\n", "receive value: (1)", "\n",
                "receive finished", "\n",
            ]
        )
    }

    @Test func logsFiniteAndSynchronousDemandErrorsAndCancel() {
        let stream = RecordingStream()
        let upstream = DrivenPublisher<Int, OperatorError>()
        let subscriber = TrackingSubscriber<Int, OperatorError>(initialDemand: .max(2)) { _, value in
            value == 1 ? .max(1) : .none
        }
        upstream.print("p", to: ForwardingStream(target: stream)).subscribe(subscriber)
        upstream.send(1)
        upstream.send(2)
        subscriber.request(.unlimited)
        subscriber.cancel()
        #expect(
            stream.text == """
                p: receive subscription: (TrackingSubscription)
                p: request max: (2)
                p: receive value: (1)
                p: request max: (1) (synchronous)
                p: receive value: (2)
                p: request unlimited
                p: receive cancel

                """
        )
        #expect(upstream.subscription.history == [.requested(.max(2)), .requested(.unlimited), .cancelled])

        let failing = RecordingStream()
        _ = Fail<Int, OperatorError>(error: OperatorError(code: 4)).print(to: ForwardingStream(target: failing))
            .sink(receiveCompletion: { _ in }, receiveValue: { _ in })
        #expect(failing.text == "receive subscription: (Empty)\nrequest unlimited\nreceive error: (OperatorError(4))\n")
    }

    @Test func releasesEverythingAfterEveryEnding() {
        let stream = RecordingStream()
        for ending in StreamEnding.allCases {
            #expect(releases(ending) { $0.print(to: ForwardingStream(target: stream)) } == (true, true))
        }
    }

    @Test func racingRequestsAndCancelNeverOverDeliver() {
        for _ in 0..<10 {
            let stream = RecordingStream()
            let (report, requested) = raceRequestsAgainstCancel(
                (0..<100_000).publisher.print(to: ForwardingStream(target: stream))
            )
            #expect(report.values <= requested)
            #expect(report.completions <= 1)
            #expect(report.overlaps == 0)
        }
    }
}
