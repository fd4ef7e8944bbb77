import Synchronization

/// The subscription of a publisher that has one value to give: it sends the value on the first
/// demand, then finishes. Used by ``Just``, `Result.Publisher` and `Optional.Publisher`.
///
/// Lock-free: one atomic ``SingleValuePhase`` decides who owns the subscriber and the value. The
/// thread that moves it out of `pending` (the first `request`, or `cancel`) takes them; a
/// `cancel` that lands while the value is being received leaves them to the delivering thread,
/// which then does not send the completion.
///
/// **Ownership:** retained by its subscriber; retains the subscriber and the value until it
/// finishes or is cancelled.
///
/// **Thread safety:** safe to call from any thread.
@usableFromInline
internal final class SingleValueSubscription<Downstream: Subscriber>: Subscription, CustomStringConvertible,
    CustomReflectable, @unchecked Sendable
{
    // @unchecked Sendable: `payload` is only touched by the thread that moved `phase` out of
    // `pending`; `name` and `requestFunction` are immutable.

    /// One of the ``SingleValuePhase`` constants.
    @usableFromInline let phase = Atomic<Int>(SingleValuePhase.pending)
    /// The subscriber and the value, until taken. A class reference rather than a generic enum or
    /// optionals, so that `deinit` (never specialized) needs no generic metadata lookup.
    // Owned by whoever moves `phase` out of `pending`; exclusive, so not checked dynamically.
    #if SPOUT_CHECKED_EXCLUSIVITY
        @usableFromInline var payload: SingleValuePayload<Downstream>?
    #else
        // Unchecked: bench/reactive.sh `flatmap-optional` (every child's subscription).
        @usableFromInline @exclusivity(unchecked) var payload: SingleValuePayload<Downstream>?
    #endif
    @usableFromInline let name: String  // Immutable.
    /// `request(_:)` forwards here. Made in `init`, which the subscribing code calls with concrete
    /// types, so it is specialized (a protocol witness of a generic class never is); it captures
    /// nothing, so making it allocates nothing.
    @usableFromInline let requestFunction: (SingleValueSubscription<Downstream>, Subscribers.Demand) -> Void

    @inlinable
    internal init(value: Downstream.Input, downstream: Downstream, name: String) {
        payload = SingleValuePayload(downstream: downstream, value: value)
        self.name = name
        requestFunction = { subscription, demand in subscription.requestSpecialized(demand) }
    }

    @inlinable
    internal var description: String { name }

    @inlinable
    internal var customMirror: Mirror { Mirror(self, children: []) }

    @inlinable
    internal func request(_ demand: Subscribers.Demand) {
        requestFunction(self, demand)
    }

    @inlinable
    func requestSpecialized(_ demand: Subscribers.Demand) {
        if demand == .none {
            apiViolation("a subscription's demand must be greater than zero")
        }
        guard
            phase.compareExchange(
                expected: SingleValuePhase.pending,
                desired: SingleValuePhase.delivering,
                ordering: .acquiring
            ).exchanged,
            let payload = payload.take()
        else { return }
        _ = payload.downstream.receive(payload.value)
        let finishing = phase.compareExchange(
            expected: SingleValuePhase.delivering,
            desired: SingleValuePhase.terminal,
            ordering: .acquiringAndReleasing
        ).exchanged
        if finishing {
            payload.downstream.receive(completion: .finished)
        }
    }

    @inlinable
    internal func cancel() {
        let before = phase.exchange(SingleValuePhase.terminal, ordering: .acquiringAndReleasing)
        if before == SingleValuePhase.pending {
            payload = nil
        }
    }
}

/// The phases of a ``SingleValueSubscription``.
@usableFromInline
internal enum SingleValuePhase {
    /// Waiting for demand. Next: `delivering`, `terminal`.
    @inlinable static var pending: Int { 0 }
    /// The value is being received; the completion follows unless cancelled. Next: `terminal`.
    @inlinable static var delivering: Int { 1 }
    /// Finished or cancelled. Final.
    @inlinable static var terminal: Int { 2 }
}

/// What a ``SingleValueSubscription`` delivers: its subscriber and its value.
///
/// **Ownership:** owned by the subscription until taken by the thread that delivers or cancels.
///
/// **Thread safety:** immutable.
@usableFromInline
internal final class SingleValuePayload<Downstream: Subscriber> {
    @usableFromInline let downstream: Downstream  // Immutable.
    @usableFromInline let value: Downstream.Input  // Immutable.

    @inlinable
    init(downstream: Downstream, value: Downstream.Input) {
        self.downstream = downstream
        self.value = value
    }
}
