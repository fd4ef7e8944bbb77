/// The subscription of a publisher that has one value to give: it sends the value on the first
/// demand, then finishes. Used by ``Just``, `Result.Publisher` and `Optional.Publisher`.
///
/// **Ownership:** retained by its subscriber; retains the subscriber and the value until it
/// finishes or is cancelled.
///
/// **Thread safety:** safe to call from any thread.
@usableFromInline
internal final class SingleValueSubscription<Downstream: Subscriber>: Subscription, CustomStringConvertible,
    CustomReflectable, @unchecked Sendable
{
    // @unchecked Sendable: `state` is only touched inside `lock`; `name` is immutable.

    /// Where the one value is.
    @usableFromInline
    enum State {
        /// Waiting for demand. Next: `.delivering`, `.terminal`.
        case pending(Downstream, Downstream.Input)
        /// The value is being received; the completion follows unless cancelled. Next: `.terminal`.
        case delivering(Downstream)
        /// Finished or cancelled. Final.
        case terminal
    }

    @usableFromInline let lock = Lock()
    // The lock makes every access exclusive, so the dynamic exclusivity check (a runtime call per
    // access) is off.
    @usableFromInline @exclusivity(unchecked) var state: State  // Guarded by lock.
    @usableFromInline let name: String
    /// `request(_:)` forwards here. Made in `init`, which the subscribing code calls with concrete
    /// types, so it is specialized (a protocol witness of a generic class never is); it captures
    /// nothing, so making it allocates nothing.
    @usableFromInline let requestFunction: (SingleValueSubscription<Downstream>, Subscribers.Demand) -> Void

    @inlinable
    internal init(value: Downstream.Input, downstream: Downstream, name: String) {
        state = .pending(downstream, value)
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
        let delivery = lock.withLock { () -> (Downstream, Downstream.Input)? in
            guard case .pending(let downstream, let value) = state else { return nil }
            state = .delivering(downstream)
            return (downstream, value)
        }
        guard let (downstream, value) = delivery else { return }
        _ = downstream.receive(value)
        let finishing = lock.withLock { () -> Bool in
            guard case .delivering = state else { return false }
            state = .terminal
            return true
        }
        if finishing {
            downstream.receive(completion: .finished)
        }
    }

    @inlinable
    internal func cancel() {
        lock.withLock { state = .terminal }
    }
}
