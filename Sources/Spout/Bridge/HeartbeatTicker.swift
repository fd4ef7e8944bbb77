import Dispatch
import EventLoops
import HTTPServer

/// One timer per event loop that ticks every open stream on that loop, so that 10,000 idle
/// streams cost one timer, not 10,000.
///
/// A stream that wrote nothing for `ticksPerHeartbeat` consecutive ticks writes a comment. The
/// tick is half the heartbeat interval (at most a second), so a keep-alive goes out between one
/// and one-and-a-half intervals after the last output.
///
/// **Ownership:** created by the service for each loop at start; cancelled at shutdown.
///
/// **Thread safety:** confined to its loop's queue, except ``cancel()``.
final class HeartbeatTicker: @unchecked Sendable {
    // @unchecked Sendable: `participants` and `timer` are confined to `loop.queue`.
    let loop: EventLoop  // Immutable.
    private let tickNanoseconds: Int  // Immutable.
    private let ticksPerHeartbeat: Int  // Immutable.
    private var participants: [ObjectIdentifier: any HeartbeatParticipant] = [:]  // Loop-confined.
    /// Runs only while there are participants: an idle timer would keep waking Dispatch, whose idle worker
    /// threads exit only after 5 s without a wake-up. // Loop-confined.
    private(set) var timer: (any DispatchSourceTimer)?
    private var isCancelled = false  // Loop-confined.

    init(loop: EventLoop, heartbeat: Duration) {
        self.loop = loop
        let heartbeatNanoseconds = max(heartbeat.nanoseconds, 2_000_000)
        let tickNanoseconds = min(heartbeatNanoseconds / 2, 1_000_000_000)
        self.tickNanoseconds = Int(tickNanoseconds)
        ticksPerHeartbeat = max(1, Int((heartbeatNanoseconds + tickNanoseconds - 1) / tickNanoseconds))
    }

    /// Starts ticking `participant` until ``remove(_:)``.
    func add(_ participant: any HeartbeatParticipant) {
        loop.preconditionInEventLoop()
        participants[ObjectIdentifier(participant)] = participant
        guard timer == nil, !isCancelled else { return }
        let timer = DispatchSource.makeTimerSource(queue: loop.queue)
        timer.schedule(
            deadline: .now() + .nanoseconds(tickNanoseconds),
            repeating: .nanoseconds(tickNanoseconds),
            leeway: .nanoseconds(tickNanoseconds / 10)
        )
        timer.setEventHandler { [weak self] in self?.tick() }
        timer.activate()
        self.timer = timer
    }

    /// Stops ticking `participant`.
    func remove(_ participant: any HeartbeatParticipant) {
        loop.preconditionInEventLoop()
        participants[ObjectIdentifier(participant)] = nil
        if participants.isEmpty {
            timer?.cancel()
            timer = nil
        }
    }

    /// Stops the timer for good.
    func cancel() {
        loop.execute { [self] in
            isCancelled = true
            timer?.cancel()
            timer = nil
        }
    }

    private func tick() {
        for participant in participants.values {
            participant.heartbeatTick(ticksPerHeartbeat: ticksPerHeartbeat)
        }
    }
}

extension Duration {
    /// The duration in whole nanoseconds, saturating.
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return scaled.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue
    }
}
