/// A subscriber that relays each call to a closure.
///
/// Upstream reaches a subscriber through a protocol witness, and a witness of a generic class runs
/// unspecialized code that looks up generic metadata at every step. The combining operators make
/// these closures inside their `receive(subscriber:)`, where every type is concrete (and which
/// cross-module optimization specializes), so each element crosses one unspecialized call and then
/// runs specialized code.
///
/// **Ownership:** retained by the upstream's subscription; retains what its closures capture.
///
/// **Thread safety:** as safe as its closures; the operators' closures are safe from any thread.
@usableFromInline
internal final class RelaySubscriber<Input, Failure: Error>: Subscriber, CustomStringConvertible {
    @usableFromInline let description: String  // Immutable.
    @usableFromInline let onSubscription: (any Subscription) -> Void  // Immutable.
    @usableFromInline let onValue: (Input) -> Subscribers.Demand  // Immutable.
    @usableFromInline let onCompletion: (Subscribers.Completion<Failure>) -> Void  // Immutable.

    @inlinable
    init(
        _ description: String,
        onSubscription: @escaping (any Subscription) -> Void,
        onValue: @escaping (Input) -> Subscribers.Demand,
        onCompletion: @escaping (Subscribers.Completion<Failure>) -> Void
    ) {
        self.description = description
        self.onSubscription = onSubscription
        self.onValue = onValue
        self.onCompletion = onCompletion
    }

    @inlinable
    func receive(subscription: any Subscription) {
        onSubscription(subscription)
    }

    @inlinable
    func receive(_ input: Input) -> Subscribers.Demand {
        onValue(input)
    }

    @inlinable
    func receive(completion: Subscribers.Completion<Failure>) {
        onCompletion(completion)
    }
}
