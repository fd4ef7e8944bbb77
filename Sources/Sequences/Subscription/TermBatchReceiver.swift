import Reactive

/// A sequence subscription's subscriber seen as a `BatchSubscriber` of terms, when it is one.
///
/// Found once per subscription with a plain conformance check (`as? any BatchSubscriber`, cached by the
/// runtime per type) and a check that its `Input` is ``Term``. A cast to `any BatchSubscriber<Term, Never>`
/// would say the same, but the runtime evaluates a constrained existential's same-type requirements from
/// their mangled names on every cast: about 15,000 instructions, more than a whole small JSON request
/// costs besides.
///
/// **Ownership:** Held by its subscription while the subscriber is; retains the subscriber.
///
/// **Thread safety:** Immutable; called by the subscription's emitter only.
struct TermBatchReceiver {
    /// Hands a batch to the subscriber; made where its concrete type is open, so that the call goes through
    /// its witness table with no per-batch type lookup. // Immutable.
    private let deliver: (UnsafeBufferPointer<Term>) -> Subscribers.Demand

    /// The receiver for `downstream`, or `nil` if it does not take batches.
    init?<Downstream: Subscriber>(_ downstream: Downstream) where Downstream.Input == Term {
        guard let batch = downstream as? any BatchSubscriber, let deliver = Self.deliver(to: batch) else {
            return nil
        }
        self.deliver = deliver
    }

    /// Hands `terms` to the subscriber and returns the demand it adds.
    @inline(__always)
    func receive(_ terms: UnsafeBufferPointer<Term>) -> Subscribers.Demand {
        deliver(terms)
    }

    private static func deliver<Batch: BatchSubscriber>(
        to subscriber: Batch
    ) -> ((UnsafeBufferPointer<Term>) -> Subscribers.Demand)? {
        // `Batch` is the subscriber's dynamic type, whose `Input` is the `Term` of the subscription's
        // `Downstream`; checked anyway, once, so that the rebinding below is always to the same type.
        guard Batch.Input.self == Term.self else { return nil }
        return { terms in
            let base = UnsafeRawPointer(terms.baseAddress)?.assumingMemoryBound(to: Batch.Input.self)
            return subscriber.receive(batch: UnsafeBufferPointer(start: base, count: terms.count))
        }
    }
}
