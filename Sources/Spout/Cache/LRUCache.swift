/// A bounded key–value store that evicts the least recently used entries when it is full: more than
/// `capacity` entries, or more than `maxCost` in total cost (each entry's cost is given when it is stored,
/// e.g. its size in bytes).
///
/// Entries live in a slot array linked into a recency list (most recent at the head) and are found
/// through a dictionary, so lookups, inserts, removals and evictions are all O(1). Freed slots are
/// reused, so the arrays never grow beyond `capacity`.
///
///     var cache = LRUCache<String, Int>(capacity: 2)
///     cache["a"] = 1; cache["b"] = 2; _ = cache["a"]; cache["c"] = 3
///     print(cache.keys)
///     // Prints: ["c", "a"]
///
/// **Ownership:** a value; the owner keeps it (``ResponseCache`` keeps one under its lock).
///
/// **Thread safety:** value type; not shared.
///
/// - Complexity: O(1) for ``subscript(_:)``, ``peek(_:)``, ``insert(_:for:cost:)`` (plus O(1) per entry it
///   evicts) and ``removeValue(for:)``;
///   O(n) for ``keys``.
struct LRUCache<Key: Hashable, Value> {
    private struct Node {
        var key: Key
        var value: Value
        var cost: Int
        var previous: Int?
        var next: Int?
    }

    /// The most entries kept; zero keeps nothing.
    let capacity: Int
    /// The most total cost kept (at most `Int.max / 2`, so sums never overflow); an entry costing more
    /// than this on its own is not stored.
    let maxCost: Int
    /// The summed cost of the entries.
    private(set) var totalCost = 0

    private var index: [Key: Int] = [:]
    /// Slots; `nil` where an entry was removed and the slot is on `free`.
    private var nodes: [Node?] = []
    private var free: [Int] = []
    private var head: Int?
    private var tail: Int?

    /// Creates an empty cache holding at most `capacity` entries and `maxCost` total cost (negative
    /// values count as zero).
    init(capacity: Int, maxCost: Int = .max) {
        self.capacity = max(0, capacity)
        self.maxCost = min(max(0, maxCost), Int.max / 2)
    }

    /// The number of entries.
    var count: Int { index.count }

    /// The keys from most to least recently used.
    var keys: [Key] {
        var result: [Key] = []
        result.reserveCapacity(index.count)
        var cursor = head
        while let slot = cursor, let node = nodes[slot] {
            result.append(node.key)
            cursor = node.next
        }
        return result
    }

    /// The value for `key`, marking it most recently used; setting `nil` removes it.
    subscript(key: Key) -> Value? {
        mutating get {
            guard let slot = index[key], let node = nodes[slot] else { return nil }
            moveToHead(slot)
            return node.value
        }
        set {
            if let newValue {
                insert(newValue, for: key, cost: 0)
            } else {
                removeValue(for: key)
            }
        }
    }

    /// The value for `key` without changing its recency.
    func peek(_ key: Key) -> Value? {
        index[key].flatMap { nodes[$0]?.value }
    }

    /// Stores `value` for `key` as the most recently used entry and returns the keys evicted to make room
    /// (least recently used first). A value whose `cost` (negative counts as zero) exceeds ``maxCost`` is
    /// not stored, and any older value for `key` is dropped, since it has been replaced.
    @discardableResult
    mutating func insert(_ value: Value, for key: Key, cost: Int) -> [Key] {
        let cost = max(0, cost)
        guard capacity > 0, cost <= maxCost else {
            removeValue(for: key)
            return []
        }
        if let slot = index[key], let old = nodes[slot] {
            nodes[slot]?.value = value
            nodes[slot]?.cost = cost
            totalCost = totalCost - old.cost + cost  // at most 2 × maxCost ≤ Int.max
            moveToHead(slot)
        } else {
            var evicted: [Key] = []
            if index.count >= capacity, let last = tail, let node = nodes[last] {
                evicted.append(node.key)
                removeValue(for: node.key)
            }
            let node = Node(key: key, value: value, cost: cost, previous: nil, next: head)
            let slot: Int
            if let reused = free.popLast() {
                slot = reused
                nodes[slot] = node
            } else {
                slot = nodes.count
                nodes.append(node)
            }
            if let oldHead = head { nodes[oldHead]?.previous = slot }
            head = slot
            if tail == nil { tail = slot }
            index[key] = slot
            totalCost += cost  // at most maxCost before, plus cost ≤ maxCost: ≤ Int.max
            return evicted + evictOverCost()
        }
        return evictOverCost()
    }

    /// Evicts from the least recently used end until the total cost is within ``maxCost``; the head (the
    /// entry just stored, which fits on its own) always stays.
    private mutating func evictOverCost() -> [Key] {
        var evicted: [Key] = []
        while totalCost > maxCost, let last = tail, last != head, let node = nodes[last] {
            evicted.append(node.key)
            removeValue(for: node.key)
        }
        return evicted
    }

    /// Removes the entry for `key`; returns its value.
    @discardableResult
    mutating func removeValue(for key: Key) -> Value? {
        guard let slot = index.removeValue(forKey: key), let node = nodes[slot] else { return nil }
        totalCost -= node.cost
        unlink(slot, node)
        nodes[slot] = nil
        free.append(slot)
        return node.value
    }

    private mutating func moveToHead(_ slot: Int) {
        guard head != slot, let node = nodes[slot] else { return }
        unlink(slot, node)
        nodes[slot]?.previous = nil
        nodes[slot]?.next = head
        if let oldHead = head { nodes[oldHead]?.previous = slot }
        head = slot
        if tail == nil { tail = slot }
    }

    private mutating func unlink(_ slot: Int, _ node: Node) {
        if let previous = node.previous { nodes[previous]?.next = node.next } else { head = node.next }
        if let next = node.next { nodes[next]?.previous = node.previous } else { tail = node.previous }
    }
}
