/// A publisher that begins producing elements only when ``connect()`` is called.
///
/// `multicast(_:)` and `Timer.publish(every:on:in:)` return connectable publishers, so that
/// several subscribers can attach before anything is sent. `autoconnect()` connects on the
/// first subscription.
///
/// **Thread safety:** `connect()` is safe to call from any thread.
public protocol ConnectablePublisher<Output, Failure>: Publisher {
    /// Connects to the publisher, allowing it to produce elements, and returns a cancellable
    /// that stops publishing when cancelled.
    func connect() -> any Cancellable
}
