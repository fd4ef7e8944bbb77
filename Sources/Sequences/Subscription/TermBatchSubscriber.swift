import Reactive

/// A subscriber to the sequence publishers that takes the terms of a window several at a time.
///
/// Not in Combine. A sequence subscription whose subscriber conforms delivers through
/// ``receive(batch:)`` instead of `receive(_:)`: it produces up to ``SequencePublisher/batchCapacity``
/// terms in a tight loop, then hands them over in one call. That is one call through the protocol per
/// batch rather than per term, which matters where the subscriber's type is not known to the code that
/// produces the terms (the subscription is compiled generic over its subscriber).
///
/// The contract is `receive(_:)`'s, applied to each term of the batch in order: a batch never holds
/// more terms than the demand outstanding when it was made, the terms come in index order with no gap,
/// and the demand returned is added once the batch is received. A cancel that arrives while a batch
/// is being received takes effect at the next batch. `receive(_:)` is still required (the publisher
/// chain is the ordinary one) but the sequence publishers do not call it for a conforming subscriber.
///
/// **Ownership:** `batch` is lent for the duration of the call: copy the terms you keep.
///
/// **Thread safety:** called on the thread that called `request(_:)`, inside that call, as
/// `receive(_:)` would be.
public protocol TermBatchSubscriber: Subscriber where Input == Term, Failure == Never {
    /// Receives the next terms of the stream, at least one, in index order.
    ///
    /// - Parameter batch: The terms, valid only during the call.
    /// - Returns: Additional demand, as from `receive(_:)` (`.none` for none).
    func receive(batch: UnsafeBufferPointer<Term>) -> Subscribers.Demand
}
