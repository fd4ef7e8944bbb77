/// Something registered with an ``EventLoop`` for the readiness of one descriptor: an HTTP connection, a Redis
/// client, a TLS connection, a listener.
///
/// Register it with ``EventLoop/register(_:_:interest:)``; the loop then calls ``pollReady(_:)`` on its own queue
/// each time `epoll` reports the descriptor ready for what its ``PollInterest`` asks (level-triggered: a readiness
/// that is not consumed is reported again at the next poll). Change what it is told with
/// ``EventLoop/updateInterest(_:_:)``; ``EventLoop/deregister(_:)`` before closing the descriptor.
///
/// **Ownership:** The loop retains the target from registration to deregistration.
///
/// **Thread safety:** ``pollReady(_:)`` runs on the loop's queue only.
public protocol PollTarget: AnyObject {
    /// Called on the loop when the descriptor is ready (``PollEvent`` says for what).
    func pollReady(_ event: PollEvent)
}
