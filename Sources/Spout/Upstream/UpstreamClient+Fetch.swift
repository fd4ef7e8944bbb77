import Dispatch
import Foundation
import Reactive
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The arguments of one `retry(_:withBackoff:…)`, built per request.
///
/// **Thread safety:** value type; not shared (its closures capture the request's tracker).
struct RetryPolicy {
    var maxRetries: Int
    var backoff: Backoff
    var shouldRetry: (UpstreamError) -> Bool
    var retryAfter: (UpstreamError) -> Duration?
}

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
                    // A Retry-After longer than what is left of the deadline would only end in a
                    // timeout: fail now with the upstream's own answer instead.
                    let wait = retryAfter(error).map { backoff.cappedHint($0) } ?? .zero
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

/// What one upstream request has tried so far: attempts, the last status, and its deadline.
///
/// **Ownership:** created per subscription of ``UpstreamClient/fetch(_:)``, retained by its
/// closures until the request ends.
///
/// **Thread safety:** safe to call from any thread (a `Mutex`).
final class RequestTracker: Sendable {
    private struct State {
        var attempts = 0
        var lastStatus: Int?
    }

    private let state = LockedState(State())
    private let deadline: UInt64

    init(deadlineNanoseconds: Int) {
        let now = DispatchTime.now().uptimeNanoseconds
        let (sum, overflow) = now.addingReportingOverflow(UInt64(max(0, deadlineNanoseconds)))
        deadline = overflow ? .max : sum
    }

    /// Counts an attempt; returns its number, from 1.
    func attemptStarted() -> Int {
        state.withLock { state in
            state.attempts += 1
            return state.attempts
        }
    }

    /// Records the status of a response.
    func responded(status: Int) {
        state.withLock { $0.lastStatus = status }
    }

    /// The time left before the deadline.
    var remaining: Duration {
        let now = DispatchTime.now().uptimeNanoseconds
        return now >= deadline ? .zero : .nanoseconds(Int64(clamping: deadline - now))
    }

    /// `error` as the caller sees it: wrapped with what was tried when there was more than one attempt.
    func finalError(_ error: UpstreamError) -> UpstreamError {
        let (attempts, lastStatus) = state.withLock { ($0.attempts, $0.lastStatus) }
        if case .gaveUp = error { return error }
        return attempts > 1 ? .gaveUp(attempts: attempts, lastStatus: lastStatus, error: error) : error
    }
}

/// Counts one attempt in the metrics exactly once: in flight while it runs, then its outcome and
/// duration.
///
/// **Ownership:** retained by the attempt's `handleEvents` closures.
///
/// **Thread safety:** safe to call from any thread (a `Mutex`).
final class AttemptProbe: Sendable {
    private let metrics: SpoutMetrics?
    /// When the attempt started (uptime nanoseconds), until it ends; `nil` before and after.
    private let start = LockedState<UInt64?>(nil)

    init(metrics: SpoutMetrics?) {
        self.metrics = metrics
    }

    func started() {
        guard let metrics else { return }
        start.withLock { $0 = DispatchTime.now().uptimeNanoseconds }
        metrics.upstreamInFlight.add(1)
    }

    func ended(_ outcome: UpstreamOutcome) {
        guard let metrics,
            let began = start.withLock({ start in
                defer { start = nil }; return start
            })
        else { return }
        metrics.upstreamInFlight.add(-1)
        metrics.upstreamRequests.increment([outcome.rawValue])
        let elapsed = DispatchTime.now().uptimeNanoseconds &- began
        metrics.upstreamDuration.observe(Double(elapsed) / 1e9)
    }
}
