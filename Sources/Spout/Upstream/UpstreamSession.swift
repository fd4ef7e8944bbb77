import Dispatch
import Foundation
import Reactive
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The `URLSession`s of an ``UpstreamClient`` and the serial queues that are the only places Spout
/// calls into FoundationNetworking.
///
/// **Why queues of their own.** On Linux, FoundationNetworking implements `URLSession.dataTask(with:)`,
/// `URLSessionTask.resume()` and `cancel()` with a `DispatchQueue.sync` onto the session's work queue,
/// the queue that also drives libcurl. While that queue is busy — an upstream pouring in a body — the
/// caller waits, and a caller on an event loop stalls every connection of its loop: `/health` stopped
/// answering and the deadline's cancel never returned. So no caller makes those calls: each is queued on
/// a ``NetworkingLane``'s serial queue and the caller returns at once.
///
/// **Why several.** A session whose work queue is held by libcurl keeps a `cancel()` waiting for as long
/// as the upstream keeps the socket full: measured, 0.05 to 7 s against a loopback upstream sending
/// without end (and the session's own timeouts, timers on that same queue, do not fire meanwhile). Every
/// later call to that session would wait behind it. So there are ``laneCount`` lanes, each with its own
/// session (created at its first transfer) and queue, and a transfer starts on the lane with the fewest
/// calls waiting: one runaway upstream body holds up one lane, not the client.
///
/// **The check.** Each call asserts that it runs on its lane's queue and not on one of the event-loop
/// queues the client was given (`dispatchPrecondition`, kept in release builds), and is reported to the
/// test observers (see `UpstreamSession+Testing.swift`) with where it ran and where it was asked for.
///
/// **Ownership:** one per ``UpstreamClient``; a running transfer retains its lane.
///
/// **Thread safety:** safe to call from any thread; the lanes are.
final class UpstreamSession: Sendable {
    /// How many sessions (and queues) the calls are spread over.
    static let laneCount = 4

    /// The lanes, each with a session, a queue and a router. // Immutable.
    let lanes: [NetworkingLane]
    private let nextLane = Atomic<Int>(0)

    /// Marks the event-loop queues given to any session, to tell whether a caller is on one.
    static let eventLoopKey = DispatchSpecificKey<Bool>()

    /// - Parameters:
    ///   - requestTimeout: The sessions' `timeoutIntervalForRequest` (a backstop; Spout's own timers
    ///     end attempts first).
    ///   - resourceTimeout: The sessions' `timeoutIntervalForResource` (also a backstop).
    ///   - eventLoopQueues: The queues of the service's event loops: no call may run on them. They are
    ///     marked with a queue-specific key of this type's own, to report where a call was asked for.
    ///   - additionalHeaders: Headers every request of the sessions carries, besides `Accept` and `User-Agent`.
    init(
        requestTimeout: TimeInterval,
        resourceTimeout: TimeInterval,
        eventLoopQueues: [DispatchQueue] = [],
        additionalHeaders: [String: String] = [:]
    ) {
        for loop in eventLoopQueues { loop.setSpecific(key: Self.eventLoopKey, value: true) }
        lanes = (0..<Self.laneCount).map { index in
            NetworkingLane(
                index: index,
                requestTimeout: requestTimeout,
                resourceTimeout: resourceTimeout,
                eventLoopQueues: eventLoopQueues,
                additionalHeaders: additionalHeaders
            )
        }
    }

    /// Whether the calling thread runs one of the event-loop queues given to any session.
    static var isOnEventLoop: Bool { DispatchQueue.getSpecific(key: eventLoopKey) == true }

    /// The lane for a new transfer: the one with the fewest calls waiting, the next in turn among equals.
    func lane() -> NetworkingLane {
        let start = nextLane.wrappingAdd(1, ordering: .relaxed).oldValue
        var best = lanes[start % lanes.count]
        for offset in 1..<lanes.count {
            let candidate = lanes[(start &+ offset) % lanes.count]
            if candidate.pendingCalls < best.pendingCalls { best = candidate }
        }
        return best
    }

    /// The transfers whose tasks run, on every lane (for tests).
    var runningTransfers: Int { lanes.reduce(0) { $0 + $1.router.count } }

    /// Invalidates every lane's session: their tasks are cancelled and later transfers fail as cancelled.
    func invalidate() {
        for lane in lanes { lane.invalidate() }
    }
}
