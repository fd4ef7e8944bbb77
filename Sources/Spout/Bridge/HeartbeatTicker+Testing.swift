import EventLoops
import HTTPServer

extension HeartbeatTicker {
    /// Whether the timer runs, for tests. On the ticker's loop.
    var isTicking: Bool {
        loop.preconditionInEventLoop()
        return timer != nil
    }
}
