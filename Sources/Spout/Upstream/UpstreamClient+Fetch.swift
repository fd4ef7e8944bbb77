import Dispatch
import Foundation
import Reactive
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension UpstreamClient {
    /// One `GET url`, uncached: attempts with backoff, bounded by the overall deadline. Each
    /// subscription is a new request with its own attempt count and deadline.
    func fetch(
        _ url: URL,
        target: UpstreamTarget,
        headers: [String: String] = [:]
    ) -> AnyPublisher<Data, UpstreamError> {
        let configuration = configuration
        let deadlineSeconds = configuration.deadlineSeconds
        return Deferred { [self] in
            let tracker = RequestTracker(deadlineNanoseconds: Self.nanoseconds(deadlineSeconds))
            let attempts = Deferred { [self] in
                if tracker.attemptStarted() > 1 { metrics?.upstreamRetries.increment() }
                return attempt(url, target: target, headers: headers, tracker: tracker)
            }
            let backoff = Backoff(
                base: .milliseconds(configuration.baseDelayMilliseconds),
                maximum: .milliseconds(configuration.maxDelayMilliseconds),
                jitter: .full
            )
            let retryAfter: (UpstreamError) -> Duration? = { error in
                guard case .status(_, _, let delay) = error else { return nil }
                return delay
            }
            let policy = RetryPolicy(
                maxRetries: configuration.attempts - 1,
                backoff: backoff,
                shouldRetry: { error in
                    // The upstream is never called before the time its Retry-After asked for (the wait is
                    // not capped like the backoff). A wait longer than what is left of the deadline would
                    // only end in a timeout: fail now with the upstream's answer, which the route gives as a
                    // 503 with that Retry-After.
                    let wait = retryAfter(error) ?? .zero
                    return error.isRetryable && tracker.remaining > wait
                },
                retryAfter: retryAfter
            )
            return retrying(attempts.eraseToAnyPublisher(), policy)
                .timeout(
                    .nanoseconds(Self.nanoseconds(deadlineSeconds)),
                    scheduler: timers,
                    customError: { .timeout(target, seconds: deadlineSeconds) }
                )
                .mapError { tracker.finalError($0) }
        }
        .eraseToAnyPublisher()
    }

    /// One attempt: the transfer, the status check and the attempt's time limit, with its metrics.
    private func attempt(
        _ url: URL,
        target: UpstreamTarget,
        headers: [String: String],
        tracker: RequestTracker
    ) -> AnyPublisher<Data, UpstreamError> {
        let timeoutSeconds = configuration.attemptTimeoutSeconds
        let probe = AttemptProbe(metrics: metrics)
        let transfer = BodyTransfer(
            url: url,
            headers: headers,
            timeoutInterval: Self.backstop(timeoutSeconds),
            maxBodyBytes: configuration.maxBodyBytes,
            session: session
        )
        return
            transfer
            .mapError { UpstreamError($0, target: target, timeoutSeconds: timeoutSeconds) as any Error }
            .tryMap { data, response -> Data in
                tracker.responded(status: response.statusCode)
                guard (200..<300).contains(response.statusCode) else {
                    let retryAfter = UpstreamError.retryAfter(response.value(forHTTPHeaderField: "Retry-After"))
                    throw UpstreamError.status(target, code: response.statusCode, retryAfter: retryAfter)
                }
                return data
            }
            .mapError { $0 as? UpstreamError ?? .badBody(target, reason: String(describing: $0)) }
            .timeout(
                .nanoseconds(Self.nanoseconds(timeoutSeconds)),
                scheduler: timers,
                customError: { .timeout(target, seconds: timeoutSeconds) }
            )
            .handleEvents(
                receiveSubscription: { _ in probe.started() },
                receiveOutput: { _ in probe.ended(.ok) },
                receiveCompletion: { completion in
                    if case .failure(let error) = completion { probe.ended(UpstreamOutcome(error)) }
                },
                receiveCancel: { probe.ended(.cancelled) }
            )
            .eraseToAnyPublisher()
    }

    static func nanoseconds(_ seconds: Double) -> Int {
        let value = (seconds * 1e9).rounded()
        guard value.isFinite, value > 0 else { return 0 }
        return value >= Double(Int.max) ? .max : Int(value)
    }
}

extension UpstreamOutcome {
    /// The outcome an attempt that failed with `error` is counted under.
    init(_ error: UpstreamError) {
        switch error.underlying {
        case .status: self = .status
        case .timeout: self = .timeout
        case .unreachable(_, let reason): self = reason == "cancelled" ? .cancelled : .unreachable
        case .badBody, .tooLarge, .gaveUp: self = .badBody
        }
    }
}
