import Reactive
import TestSupport
import Testing

@Suite struct CatchTests {
    @Test func replacesAFailedUpstreamWithTheHandlersPublisher() {
        let subscriber = TrackingSubscriber<Int, Never>()
        [1, 2].publisher.setFailureType(to: OperatorError.self).append(Fail(error: OperatorError()))
            .catch { _ in Just(0) }
            .subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .value(1), .value(2), .value(0), .completion(.finished)])
    }

    @Test func replacementGetsTheDemandLeftOver() {
        let upstream = DrivenPublisher<Int, OperatorError>()
        let replacement = DrivenPublisher<Int, Never>()
        var caught: [OperatorError] = []
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(3))
        upstream.catch { error -> DrivenPublisher<Int, Never> in
            caught.append(error)
            return replacement
        }
        .subscribe(subscriber)
        upstream.send(1)
        upstream.send(completion: .failure(OperatorError(code: 6)))
        replacement.send(2)
        replacement.send(completion: .finished)
        #expect(caught == [OperatorError(code: 6)])
        #expect(replacement.subscription.history == [.requested(.max(2))])
        #expect(subscriber.history == [.subscription, .value(1), .value(2), .completion(.finished)])
    }

    @Test func finishingUpstreamNeverCallsTheHandler() {
        var calls = 0
        let subscriber = TrackingSubscriber<Int, Never>()
        Just(1).setFailureType(to: OperatorError.self).catch { _ -> Just<Int> in
            calls += 1
            return Just(0)
        }
        .subscribe(subscriber)
        #expect(calls == 0)
        #expect(subscriber.values == [1])
    }

    @Test func cancelReachesTheReplacement() {
        let replacement = DrivenPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>()
        Fail<Int, OperatorError>(error: OperatorError()).catch { _ in replacement }.subscribe(subscriber)
        subscriber.cancel()
        #expect(replacement.subscription.history == [.requested(.unlimited), .cancelled])
    }

    @Test func tryCatchFailsWithTheHandlersError() {
        let subscriber = TrackingSubscriber<Int, any Error>()
        Fail<Int, OperatorError>(error: OperatorError()).tryCatch { _ -> Just<Int> in throw OperatorError(code: 2) }
            .subscribe(subscriber)
        #expect(subscriber.history.map(\.description) == ["subscription", "failure(OperatorError(2))"])
    }

    @Test func tryCatchCanReplaceAndRepublishesTheReplacementsFailure() {
        let replaced = TrackingSubscriber<Int, any Error>()
        Fail<Int, OperatorError>(error: OperatorError()).tryCatch { _ in Just(5) }.subscribe(replaced)
        #expect(replaced.history.map(\.description) == ["subscription", "value(5)", "finished"])
        let failing = TrackingSubscriber<Int, any Error>()
        Fail<Int, OperatorError>(error: OperatorError()).tryCatch { _ in
            Fail<Int, OperatorError>(error: OperatorError(code: 3))
        }
        .subscribe(failing)
        #expect(failing.history.map(\.description) == ["subscription", "failure(OperatorError(3))"])
    }

    @Test func releasesEverythingAfterEveryEnding() {
        for ending in StreamEnding.allCases {
            #expect(releases(ending) { $0.catch { _ in Just(0) } } == (true, true))
            #expect(releases(ending) { $0.tryCatch { _ in Just(0) } } == (true, true))
        }
    }

    @Test func racingRequestsAndCancelNeverOverDeliver() {
        for _ in 0..<20 {
            let failing = (0..<300).publisher.setFailureType(to: OperatorError.self).append(
                Fail(error: OperatorError())
            )
            let (report, requested) = raceRequestsAgainstCancel(failing.catch { _ in (0..<100_000).publisher })
            #expect(report.values <= requested)
            #expect(report.completions <= 1)
            #expect(report.overlaps == 0)
            #expect(report.valuesAfterCompletion == 0)
        }
    }
}

@Suite struct RetryTests {
    @Test func resubscribesAfterFailureUpToTheCount() {
        let upstream = DrivenPublisher<Int, OperatorError>()
        let subscriber = TrackingSubscriber<Int, OperatorError>()
        upstream.retry(2).subscribe(subscriber)
        upstream.send(1)
        upstream.send(completion: .failure(OperatorError(code: 1)))
        upstream.send(2)
        upstream.send(completion: .failure(OperatorError(code: 2)))
        upstream.send(3)
        upstream.send(completion: .failure(OperatorError(code: 3)))
        #expect(upstream.subscribeCount == 3)
        #expect(
            subscriber.history == [
                .subscription, .value(1), .value(2), .value(3), .completion(.failure(OperatorError(code: 3))),
            ]
        )
    }

    @Test func carriesOutstandingDemandOverToTheNextAttempt() {
        let upstream = DrivenPublisher<Int, OperatorError>()
        let subscriber = TrackingSubscriber<Int, OperatorError>(initialDemand: .max(3))
        upstream.retry(1).subscribe(subscriber)
        upstream.send(1)
        upstream.send(completion: .failure(OperatorError()))
        #expect(upstream.subscription.history == [.requested(.max(2))])
        upstream.send(2)
        upstream.send(3)
        #expect(subscriber.values == [1, 2, 3])
    }

    @Test func retryZeroRepublishesTheFirstFailure() {
        let subscriber = TrackingSubscriber<Int, OperatorError>()
        Fail<Int, OperatorError>(error: OperatorError()).retry(0).subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .completion(.failure(OperatorError()))])
    }

    @Test func finishingEndsWithoutRetry() {
        let upstream = DrivenPublisher<Int, OperatorError>()
        let subscriber = TrackingSubscriber<Int, OperatorError>()
        upstream.retry(5).subscribe(subscriber)
        upstream.send(completion: .finished)
        #expect(upstream.subscribeCount == 1)
        #expect(subscriber.history == [.subscription, .completion(.finished)])
    }

    @Test func cancelStopsRetrying() {
        let upstream = DrivenPublisher<Int, OperatorError>()
        let subscriber = TrackingSubscriber<Int, OperatorError>()
        upstream.retry(5).subscribe(subscriber)
        upstream.send(completion: .failure(OperatorError()))
        subscriber.cancel()
        upstream.send(completion: .failure(OperatorError()))
        #expect(upstream.subscribeCount == 2)
        #expect(upstream.subscription.history == [.requested(.unlimited), .cancelled])
        #expect(subscriber.history == [.subscription])
    }

    @Test func releasesEverythingAfterEveryEnding() {
        for ending in StreamEnding.allCases {
            #expect(releases(ending) { $0.retry(0) } == (true, true))
        }
    }

    @Test func racingRequestsAndCancelNeverOverDeliver() {
        for _ in 0..<20 {
            var attempts = 0
            let flaky = Deferred { () -> AnyPublisher<Int, OperatorError> in
                attempts += 1
                if attempts < 3 {
                    return (0..<100).publisher.setFailureType(to: OperatorError.self)
                        .append(Fail(error: OperatorError())).eraseToAnyPublisher()
                }
                return (0..<100_000).publisher.setFailureType(to: OperatorError.self).eraseToAnyPublisher()
            }
            let (report, requested) = raceRequestsAgainstCancel(flaky.retry(3))
            #expect(report.values <= requested)
            #expect(report.completions <= 1)
            #expect(report.overlaps == 0)
        }
    }
}
