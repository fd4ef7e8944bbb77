import Dispatch
import Foundation
import FoundationNetworking
import Reactive
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

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
