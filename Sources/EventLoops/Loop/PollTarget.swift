import Dispatch
import Glibc

/// Something registered with an ``EventLoop`` for socket readiness (a connection).
package protocol PollTarget: AnyObject {
    /// Called on the loop when the descriptor is ready.
    func pollReady(_ event: PollEvent)
}
