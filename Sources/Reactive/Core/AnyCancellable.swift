/// A type-erasing cancellable that cancels its activity when it is deinitialized.
///
/// Keep the `AnyCancellable` returned by ``Publisher/sink(receiveCompletion:receiveValue:)``
/// for as long as the subscription should live; dropping it cancels the subscription.
///
/// **Ownership:** whoever holds it owns the activity; releasing the last reference cancels.
///
/// **Thread safety:** safe to call from any thread; the cancel closure runs at most once.
public final class AnyCancellable: Cancellable, Hashable, @unchecked Sendable {
    // @unchecked Sendable: the only mutable state, `canceller`, is guarded by `lock`.
    private let lock = Lock()
    private var canceller: (() -> Void)?  // Guarded by lock.

    /// Creates a cancellable that runs `cancel` once, when cancelled or deinitialized.
    public init(_ cancel: @escaping () -> Void) {
        canceller = cancel
    }

    /// Creates a cancellable that cancels `canceller` once, when cancelled or deinitialized.
    public init<C: Cancellable>(_ canceller: C) {
        self.canceller = canceller.cancel
    }

    deinit {
        cancel()
    }

    public func cancel() {
        let action = lock.withLock { () -> (() -> Void)? in
            defer { canceller = nil }
            return canceller
        }
        action?()
    }

    public static func == (lhs: AnyCancellable, rhs: AnyCancellable) -> Bool {
        lhs === rhs
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(self))
    }
}

extension AnyCancellable {
    /// Stores this cancellable in the given collection, keeping it alive as long as the collection.
    public func store<C: RangeReplaceableCollection>(in collection: inout C) where C.Element == AnyCancellable {
        collection.append(self)
    }

    /// Stores this cancellable in the given set, keeping it alive as long as the set.
    public func store(in set: inout Set<AnyCancellable>) {
        set.insert(self)
    }
}
