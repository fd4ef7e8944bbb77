import Reactive
import TestSupport
import Testing

private struct TutorialError: Error, Equatable, CustomStringConvertible {
    var description: String { "TutorialError" }
}

@Suite struct TutorialSeedTests {
    @Test func filterMapCollect() {
        var output: [[Int]] = []
        _ = [1, 2, 3, 4, 5].publisher.filter { $0 > 2 }.map { $0 * 10 }.collect().sink { output.append($0) }
        #expect(output == [[30, 40, 50]])
    }

    @Test func scanRunningSums() {
        var output: [Int] = []
        _ = [1, 2, 3, 4].publisher.scan(0, +).sink { output.append($0) }
        #expect(output == [1, 3, 6, 10])
    }

    @Test func removeDuplicatesKeepsChanges() {
        var output: [Int] = []
        _ = [1, 1, 2, 2, 3, 1, 1].publisher.removeDuplicates().sink { output.append($0) }
        #expect(output == [1, 2, 3, 1])
    }

    @Test func tryMapThrowingCompletesWithTheError() {
        var events: [String] = []
        _ = [1, 2, 3].publisher
            .tryMap { value -> Int in
                if value == 2 { throw TutorialError() }
                return value
            }
            .sink(receiveCompletion: { events.append("\($0)") }, receiveValue: { events.append("\($0)") })
        #expect(events == ["1", "failure(TutorialError)"])
    }

    @Test func catchReplacesWithJust() {
        var events: [String] = []
        _ = Fail<Int, TutorialError>(error: TutorialError())
            .catch { _ in Just(-1) }
            .sink(receiveCompletion: { events.append("\($0)") }, receiveValue: { events.append("\($0)") })
        #expect(events == ["-1", "finished"])
    }

    @Test func retryTwiceOnADeferredThatFailsTwiceThenSucceeds() {
        var subscriptions = 0
        let flaky = Deferred { () -> AnyPublisher<String, TutorialError> in
            subscriptions += 1
            if subscriptions <= 2 { return Fail(error: TutorialError()).eraseToAnyPublisher() }
            return Just("ok").setFailureType(to: TutorialError.self).eraseToAnyPublisher()
        }
        var events: [String] = []
        _ = flaky.retry(2).sink(receiveCompletion: { events.append("\($0)") }, receiveValue: { events.append($0) })
        #expect(events == ["ok", "finished"])
        #expect(subscriptions == 3)

        subscriptions = -10
        var failed: [String] = []
        _ = flaky.retry(2).sink(receiveCompletion: { failed.append("\($0)") }, receiveValue: { failed.append($0) })
        #expect(failed == ["failure(TutorialError)"])
        #expect(subscriptions == -7)
    }

    @Test func replaceNilAndReplaceEmpty() {
        var output: [Int] = []
        _ = [1, nil, 3].publisher.replaceNil(with: 0).sink { output.append($0) }
        _ = Empty<Int, Never>().replaceEmpty(with: 42).sink { output.append($0) }
        #expect(output == [1, 0, 3, 42])
    }

    @Test func appendAndPrependOrdering() {
        var output: [Int] = []
        _ = [3, 4].publisher.prepend(1, 2).prepend([0]).append(5, 6).append([7]).append(Just(8))
            .sink { output.append($0) }
        #expect(output == [0, 1, 2, 3, 4, 5, 6, 7, 8])
    }

    @Test func printMatchesCombinesFormat() {
        let stream = RecordingStream()
        _ = Just(7).map { $0 * 6 }.print("answer", to: ForwardingStream(target: stream)).sink { _ in }
        #expect(
            stream.text == """
                answer: receive subscription: (Just)
                answer: request unlimited
                answer: receive value: (42)
                answer: receive finished

                """
        )

        let subjectStream = RecordingStream()
        let subject = PassthroughSubject<String, Never>()
        let cancellable = subject.print(to: ForwardingStream(target: subjectStream)).sink { _ in }
        subject.send("a")
        cancellable.cancel()
        #expect(
            subjectStream.text == """
                receive subscription: (PassthroughSubject)
                request unlimited
                receive value: (a)
                receive cancel

                """
        )
    }
}
