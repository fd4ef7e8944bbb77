/// A subscriber that can take several values in one call. Not in Combine.
///
/// A publisher that produces values in a tight loop may, when its subscriber conforms, hand them over a
/// buffer at a time through ``receive(batch:)`` instead of one `receive(_:)` call each. Where the code
/// producing the values does not know the subscriber's concrete type (a subscription compiled generic over
/// its subscriber, in another module), that is one dynamic call per batch rather than per value, and the
/// subscriber can write the whole batch in one specialised loop. Nothing else changes: the subscriber is
/// an ordinary ``Subscriber`` and every publisher may keep calling `receive(_:)`; whether a publisher
/// batches is its own choice (check with `subscriber as? any BatchSubscriber<Output, Failure>`).
///
/// The demand rules are `receive(_:)`'s, applied to the values of a batch in order:
///
/// - A batch holds at least one value and never more than the demand outstanding when it is handed over.
/// - Its values come in the order they were produced, and no value is delivered both in a batch and
///   by `receive(_:)`.
/// - The demand it returns is added once the whole batch is received, as if returned by the
///   `receive(_:)` of its last value.
/// - A cancel that arrives while a batch is being received (from inside ``receive(batch:)`` or from
///   another thread) takes effect before the next batch: the batch in hand is the last.
/// - Calls never overlap: no `receive(batch:)` runs concurrently with another, with `receive(_:)` or
///   with `receive(completion:)`, which comes after the last batch.
///
///     final class Counter: BatchSubscriber {
///         var count = 0
///         func receive(subscription: any Subscription) { subscription.request(.unlimited) }
///         func receive(_ input: Int) -> Subscribers.Demand { count += 1; return .none }
///         func receive(batch: UnsafeBufferPointer<Int>) -> Subscribers.Demand { count += batch.count; return .none }
///         func receive(completion: Subscribers.Completion<Never>) { print(count) }
///     }
///
/// **Ownership:** `batch` is lent for the duration of the call: copy the values you keep.
///
/// **Thread safety:** as for `receive(_:)`: calls may arrive on any thread, never concurrently.
public protocol BatchSubscriber<Input, Failure>: Subscriber {
    /// Receives the next values of the stream, at least one, in order.
    ///
    /// - Parameter batch: The values, valid only during the call.
    /// - Returns: Additional demand, as from `receive(_:)` (`.none` for none).
    func receive(batch: UnsafeBufferPointer<Input>) -> Subscribers.Demand
}
