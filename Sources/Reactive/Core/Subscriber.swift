/// A type that receives values from a publisher, and says how many more it wants.
///
/// The sequence of calls is: one ``receive(subscription:)``, then zero or more
/// ``receive(_:)`` (never more than the demand requested), then at most one
/// ``receive(completion:)``. A publisher never makes two of these calls at once.
///
/// **Ownership:** a subscriber usually retains its ``Subscription`` until it completes
/// or cancels; the subscription retains the subscriber until then too.
///
/// **Thread safety:** calls may arrive on any thread, but never concurrently.
public protocol Subscriber<Input, Failure>: CustomCombineIdentifierConvertible {
    /// The kind of values this subscriber receives.
    associatedtype Input

    /// The kind of errors this subscriber might receive.
    associatedtype Failure: Error

    /// Tells the subscriber that it has successfully subscribed and may request items.
    func receive(subscription: any Subscription)

    /// Tells the subscriber that the publisher has produced an element.
    ///
    /// - Returns: How many more elements the subscriber expects, added to its outstanding demand.
    func receive(_ input: Input) -> Subscribers.Demand

    /// Tells the subscriber that the publisher has completed, normally or with an error.
    func receive(completion: Subscribers.Completion<Failure>)
}

extension Subscriber where Input == Void {
    /// Tells the subscriber that a publisher of `Void` has produced an element.
    @inlinable
    public func receive() -> Subscribers.Demand {
        receive(())
    }
}
