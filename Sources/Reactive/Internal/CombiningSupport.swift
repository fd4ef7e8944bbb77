/// A first-in, first-out queue kept in a growable ring of slots: the buffer behind `zip`,
/// `flatMap`, `merge` and `buffer`.
///
/// Appending and removing at either end never moves the other elements, so a queue that is
/// filled and drained a million times costs a million constant-time steps (unlike
/// `Array.removeFirst()`, which shifts the whole array every time).
///
/// **Ownership:** a value type; the owner keeps it inside its own locked state.
///
/// **Thread safety:** value type; not shared.
///
/// - Complexity: `append`, `popFirst`, `popLast` and `first` are amortized O(1); the ring
///   doubles when full and never shrinks until ``removeAll()``.
///
/// Inlinable on purpose: without it, cross-module optimization left `popFirst` unspecialized in
/// client modules, and every element paid generic-metadata lookups (measured: zip of 1M twice as
/// slow).
@usableFromInline
internal struct RingQueue<Element> {
    /// The slots; a power-of-two count (or zero), with `nil` in every free slot.
    @usableFromInline
    var slots: ContiguousArray<Element?> = []
    /// The index of the first element, when `count > 0`.
    @usableFromInline
    var head = 0
    /// The number of elements held.
    @usableFromInline
    var count = 0

    @inlinable
    init() {}

    /// Whether the queue holds no element.
    @inlinable
    var isEmpty: Bool { count == 0 }

    /// The oldest element, if any.
    @inlinable
    var first: Element? {
        count == 0 ? nil : slots[head]
    }

    /// Adds an element at the back.
    @inlinable
    mutating func append(_ element: Element) {
        if count == slots.count {
            grow()
        }
        slots[(head &+ count) & (slots.count &- 1)] = element
        count &+= 1
    }

    /// Removes and returns the oldest element, or `nil` when empty.
    @inlinable
    mutating func popFirst() -> Element? {
        guard count > 0 else { return nil }
        let element = slots[head]
        slots[head] = nil
        head = (head &+ 1) & (slots.count &- 1)
        count &-= 1
        return element
    }

    /// Removes and returns the newest element, or `nil` when empty.
    @inlinable
    mutating func popLast() -> Element? {
        guard count > 0 else { return nil }
        let index = (head &+ count &- 1) & (slots.count &- 1)
        let element = slots[index]
        slots[index] = nil
        count &-= 1
        return element
    }

    /// Removes every element and releases the storage.
    @inlinable
    mutating func removeAll() {
        slots = []
        head = 0
        count = 0
    }

    @inlinable
    mutating func grow() {
        let newCapacity = Swift.max(8, slots.count &* 2)
        var newSlots = ContiguousArray<Element?>(repeating: nil, count: newCapacity)
        if count > 0 {
            let mask = slots.count &- 1
            for offset in 0..<count {
                newSlots[offset] = slots[(head &+ offset) & mask]
            }
        }
        slots = newSlots
        head = 0
    }
}

/// Up to four upstream subscriptions, stored inline so that forwarding demand to every side of a
/// `zip` or `combineLatest` allocates nothing.
///
/// **Ownership:** a value type; holds the subscriptions strongly while it lives.
///
/// **Thread safety:** value type; not shared.
internal struct SubscriptionQuartet {
    private var s0: (any Subscription)?
    private var s1: (any Subscription)?
    private var s2: (any Subscription)?
    private var s3: (any Subscription)?

    init() {}

    /// Whether no subscription is held.
    var isEmpty: Bool { s0 == nil && s1 == nil && s2 == nil && s3 == nil }

    /// The subscription of side `index` (0 to 3), if any.
    subscript(index: Int) -> (any Subscription)? {
        get {
            switch index {
            case 0: s0
            case 1: s1
            case 2: s2
            case 3: s3
            default: internalInconsistency("side \(index) out of range")
            }
        }
        set {
            switch index {
            case 0: s0 = newValue
            case 1: s1 = newValue
            case 2: s2 = newValue
            case 3: s3 = newValue
            default: internalInconsistency("side \(index) out of range")
            }
        }
    }

    /// Requests `demand` from every held subscription. Call it outside any lock.
    func request(_ demand: Subscribers.Demand) {
        s0?.request(demand)
        s1?.request(demand)
        s2?.request(demand)
        s3?.request(demand)
    }

    /// Cancels every held subscription. Call it outside any lock.
    func cancel() {
        s0?.cancel()
        s1?.cancel()
        s2?.cancel()
        s3?.cancel()
    }
}

/// A subscriber that relays each call to a closure.
///
/// Upstream reaches a subscriber through a protocol witness, and a witness of a generic class runs
/// unspecialized code that looks up generic metadata at every step. The combining operators make
/// these closures inside their `receive(subscriber:)`, where every type is concrete (and which
/// cross-module optimization specializes), so each element crosses one unspecialized call and then
/// runs specialized code.
///
/// **Ownership:** retained by the upstream's subscription; retains what its closures capture.
///
/// **Thread safety:** as safe as its closures; the operators' closures are safe from any thread.
internal final class RelaySubscriber<Input, Failure: Error>: Subscriber, CustomStringConvertible {
    let description: String  // Immutable.
    private let onSubscription: (any Subscription) -> Void  // Immutable.
    private let onValue: (Input) -> Subscribers.Demand  // Immutable.
    private let onCompletion: (Subscribers.Completion<Failure>) -> Void  // Immutable.

    init(
        _ description: String,
        onSubscription: @escaping (any Subscription) -> Void,
        onValue: @escaping (Input) -> Subscribers.Demand,
        onCompletion: @escaping (Subscribers.Completion<Failure>) -> Void
    ) {
        self.description = description
        self.onSubscription = onSubscription
        self.onValue = onValue
        self.onCompletion = onCompletion
    }

    func receive(subscription: any Subscription) {
        onSubscription(subscription)
    }

    func receive(_ input: Input) -> Subscribers.Demand {
        onValue(input)
    }

    func receive(completion: Subscribers.Completion<Failure>) {
        onCompletion(completion)
    }
}
