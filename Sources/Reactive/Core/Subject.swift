/// A publisher that exposes a method for outside callers to publish elements.
///
/// **Thread safety:** implementations are safe to call from any thread.
public protocol Subject<Output, Failure>: AnyObject, Publisher {
    /// Sends a value to every subscriber that has demand for it.
    func send(_ value: Output)

    /// Sends a completion signal to every subscriber. Later sends are ignored.
    func send(completion: Subscribers.Completion<Failure>)

    /// Provides this subject with an upstream subscription, requesting unlimited demand from it.
    func send(subscription: any Subscription)
}

extension Subject where Output == Void {
    /// Sends a void value to the subscribers.
    public func send() {
        send(())
    }
}
