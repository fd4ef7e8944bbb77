import Dispatch
import HTTPServer

/// Something that wants a tick from its loop's heartbeat timer.
protocol HeartbeatParticipant: AnyObject {
    /// Called on the loop every tick; writes a keep-alive after `ticksPerHeartbeat` ticks without output.
    func heartbeatTick(ticksPerHeartbeat: Int)
}
