/// A first-in, first-out queue kept in a growable ring of slots: the one queue of the library (`zip`,
/// `flatMap`, `merge`, `buffer`, the subjects' waiting values, the time operators' deliveries).
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
/// Inlinable on purpose: without it, `popFirst` stays unspecialized in client modules and every
/// element pays generic-metadata lookups (figures in bench/README.md, "Reactive: why the hot paths
/// are inlinable").
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
    // The slot index is masked to the ring, so it is always in bounds: the element operations go
    // through the buffer pointer (one uniqueness check, no bounds check, and the slot is moved
    // out rather than copied then overwritten).

    @inlinable
    mutating func append(_ element: Element) {
        if count == slots.count {
            grow()
        }
        let index = (head &+ count) & (slots.count &- 1)
        slots.withUnsafeMutableBufferPointer { $0[index] = element }
        count &+= 1
    }

    /// Removes and returns the oldest element, or `nil` when empty.
    @inlinable
    mutating func popFirst() -> Element? {
        guard count > 0 else { return nil }
        let index = head
        head = (head &+ 1) & (slots.count &- 1)
        count &-= 1
        return slots.withUnsafeMutableBufferPointer { $0[index].take() }
    }

    /// Removes and returns the newest element, or `nil` when empty.
    @inlinable
    mutating func popLast() -> Element? {
        guard count > 0 else { return nil }
        let index = (head &+ count &- 1) & (slots.count &- 1)
        count &-= 1
        return slots.withUnsafeMutableBufferPointer { $0[index].take() }
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
