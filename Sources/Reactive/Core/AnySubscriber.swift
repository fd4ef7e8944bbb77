/// A type-erasing subscriber: forwards every call to a wrapped subscriber or to closures.
///
/// **Ownership:** retains the wrapped subscriber (or closures) for as long as it lives.
///
/// **Thread safety:** as thread-safe as what it wraps.
@frozen
public struct AnySubscriber<Input, Failure: Error>: Subscriber, CustomStringConvertible {
    public let combineIdentifier: CombineIdentifier

    @usableFromInline
    internal let receiveSubscriptionThunk: (any Subscription) -> Void
    @usableFromInline
    internal let receiveValueThunk: (Input) -> Subscribers.Demand
    @usableFromInline
    internal let receiveCompletionThunk: (Subscribers.Completion<Failure>) -> Void
    private let descriptionThunk: () -> String

    /// Wraps a subscriber, keeping its identifier and description.
    public init<S: Subscriber>(_ s: S) where S.Input == Input, S.Failure == Failure {
        if let erased = s as? AnySubscriber<Input, Failure> {
            self = erased
            return
        }
        combineIdentifier = s.combineIdentifier
        receiveSubscriptionThunk = s.receive(subscription:)
        receiveValueThunk = s.receive(_:)
        receiveCompletionThunk = s.receive(completion:)
        descriptionThunk = { (s as? any CustomStringConvertible)?.description ?? "\(S.self)" }
    }

    /// Creates a subscriber from closures; a missing closure does nothing (or requests nothing).
    public init(
        receiveSubscription: ((any Subscription) -> Void)? = nil,
        receiveValue: ((Input) -> Subscribers.Demand)? = nil,
        receiveCompletion: ((Subscribers.Completion<Failure>) -> Void)? = nil
    ) {
        combineIdentifier = CombineIdentifier()
        receiveSubscriptionThunk = receiveSubscription ?? { _ in }
        receiveValueThunk = receiveValue ?? { _ in .none }
        receiveCompletionThunk = receiveCompletion ?? { _ in }
        descriptionThunk = { "Anonymous AnySubscriber" }
    }

    public var description: String { descriptionThunk() }

    @inlinable
    public func receive(subscription: any Subscription) {
        receiveSubscriptionThunk(subscription)
    }

    @inlinable
    public func receive(_ value: Input) -> Subscribers.Demand {
        receiveValueThunk(value)
    }

    @inlinable
    public func receive(completion: Subscribers.Completion<Failure>) {
        receiveCompletionThunk(completion)
    }
}
