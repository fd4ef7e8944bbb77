/// A namespace for the subscriptions that publishers send when they have nothing to deliver.
public enum Subscriptions {}

extension Subscriptions {
    /// A subscription that does nothing when asked for values or cancelled.
    ///
    /// Publishers send it before an immediate completion, so that the subscriber still
    /// sees `receive(subscription:)` first.
    public static var empty: any Subscription {
        EmptySubscription.shared
    }
}

/// The single shared do-nothing subscription.
///
/// Audited: no lock needed because it has no state.
private final class EmptySubscription: Subscription, CustomStringConvertible, Sendable {
    static let shared = EmptySubscription()

    var description: String { "Empty" }

    func request(_ demand: Subscribers.Demand) {}

    func cancel() {}
}
