/// The link between one publisher and one subscriber, through which the subscriber asks for values.
///
/// **Ownership:** retained by the subscriber until it completes or cancels.
///
/// **Thread safety:** `request(_:)` and `cancel()` may be called from any thread, concurrently
/// and re-entrantly (from inside ``Subscriber/receive(_:)``).
public protocol Subscription: Cancellable, CustomCombineIdentifierConvertible {
    /// Tells the publisher that it may send more values to the subscriber.
    ///
    /// Demand accumulates: two calls of `.max(2)` allow four values.
    func request(_ demand: Subscribers.Demand)
}
