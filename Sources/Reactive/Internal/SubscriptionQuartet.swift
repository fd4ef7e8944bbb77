/// Up to four upstream subscriptions, kept in one immutable box that is replaced when a side
/// arrives or leaves (a few times per stream), so that the value is one reference: the actions
/// that carry it stay small, and copying one costs a retain rather than four existential copies.
///
/// **Ownership:** a value type; holds the subscriptions strongly while it lives.
///
/// **Thread safety:** value type; not shared. The box is immutable.
@usableFromInline
internal struct SubscriptionQuartet {
    @usableFromInline
    internal final class Box {
        @usableFromInline let s0: (any Subscription)?
        @usableFromInline let s1: (any Subscription)?
        @usableFromInline let s2: (any Subscription)?
        @usableFromInline let s3: (any Subscription)?

        @inlinable
        init(
            _ s0: (any Subscription)?,
            _ s1: (any Subscription)?,
            _ s2: (any Subscription)?,
            _ s3: (any Subscription)?
        ) {
            self.s0 = s0
            self.s1 = s1
            self.s2 = s2
            self.s3 = s3
        }
    }

    /// `nil` when no subscription is held.
    @usableFromInline var box: Box?

    @inlinable
    init() {}

    /// Whether no subscription is held.
    @inlinable
    var isEmpty: Bool { box == nil }

    /// The subscription of side `index` (0 to 3), if any.
    @inlinable
    subscript(index: Int) -> (any Subscription)? {
        get {
            guard let box else { return nil }
            switch index {
            case 0: return box.s0
            case 1: return box.s1
            case 2: return box.s2
            case 3: return box.s3
            default: internalInconsistency("side \(index) out of range")
            }
        }
        set {
            var all = [box?.s0, box?.s1, box?.s2, box?.s3]
            guard all.indices.contains(index) else { internalInconsistency("side \(index) out of range") }
            all[index] = newValue
            if all.allSatisfy({ $0 == nil }) {
                box = nil
            } else {
                box = Box(all[0], all[1], all[2], all[3])
            }
        }
    }

    /// Requests `demand` from every held subscription. Call it outside any lock.
    @inlinable
    func request(_ demand: Subscribers.Demand) {
        guard let box else { return }
        box.s0?.request(demand)
        box.s1?.request(demand)
        box.s2?.request(demand)
        box.s3?.request(demand)
    }

    /// Cancels every held subscription. Call it outside any lock.
    @inlinable
    func cancel() {
        guard let box else { return }
        box.s0?.cancel()
        box.s1?.cancel()
        box.s2?.cancel()
        box.s3?.cancel()
    }
}
