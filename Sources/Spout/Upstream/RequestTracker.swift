import Dispatch
import Foundation
import FoundationNetworking
import Reactive
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

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
