/// A subscriber held for a subscription that serializes its deliveries and retains the subscriber
/// by hand (``SubjectConduit``, ``CombiningInner``): the owner keeps an `Unmanaged<DownstreamBox>?`,
/// retained once when it is made and released once, by whoever the owner's state machine says
/// (the thread that ends the subscription while nobody delivers, or the delivering thread once it
/// sees the end). Reaching the subscriber through it copies and retains nothing: a subscriber copied
/// out of a lock costs a retain and a release (two atomic operations) per value, and a copy of one
/// such as `map`'s a retain of each of its references.
///
/// **Thread safety:** immutable; the owner's delivery right decides who may use and release it.
@usableFromInline
internal final class DownstreamBox<Downstream> {
    @usableFromInline let downstream: Downstream

    @inlinable
    init(_ downstream: Downstream) {
        self.downstream = downstream
    }

    /// Runs `body` with the subscriber that `slot` holds, borrowed in place.
    @inlinable
    static func with<Result>(_ slot: Unmanaged<DownstreamBox>?, _ body: (Downstream) -> Result) -> Result {
        slot.unsafelyUnwrapped._withUnsafeGuaranteedRef { body($0.downstream) }
    }

    /// Empties `slot` and releases the box it held, if any (the subscriber's deinit may run).
    @inlinable
    static func release(_ slot: inout Unmanaged<DownstreamBox>?) {
        guard let box = slot else { return }
        slot = nil
        box.release()
    }
}
