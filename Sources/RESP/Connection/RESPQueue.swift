/// A first-in first-out queue with O(1) amortized `append` and `removeFirst`, releasing each element as it leaves.
///
/// **Ownership:** A value; owned by the state machine.
/// **Thread safety:** Value type; not shared.
struct RESPQueue<Element> {
    private var storage: [Element?] = []
    private var head = 0

    var count: Int { storage.count &- head }
    var isEmpty: Bool { head == storage.count }

    var first: Element? {
        head < storage.count ? storage[head] : nil
    }

    mutating func append(_ element: Element) {
        storage.append(element)
    }

    /// Changes the first element in place.
    mutating func updateFirst(_ body: (inout Element) -> Void) {
        guard head < storage.count else { return }
        body(&storage[head]!)
    }

    mutating func removeFirst() -> Element? {
        guard head < storage.count else { return nil }
        let element = storage[head]
        storage[head] = nil
        head &+= 1
        if head == storage.count {
            storage.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 64 && head >= storage.count &>> 1 {
            storage.removeSubrange(0..<head)
            head = 0
        }
        return element
    }

    /// Removes every element, returning them in order.
    mutating func removeAll() -> [Element] {
        let elements = storage[head...].map { $0! }
        storage.removeAll()
        head = 0
        return elements
    }
}

extension RESPQueue: Sendable where Element: Sendable {}
