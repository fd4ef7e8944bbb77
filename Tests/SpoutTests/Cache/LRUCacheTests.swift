import Testing

@testable import Spout

@Suite struct LRUCacheTests {
    @Test func evictsTheLeastRecentlyUsedWhenFull() {
        var cache = LRUCache<String, Int>(capacity: 2)
        #expect(cache.insert(1, for: "a", cost: 0) == [])
        #expect(cache.insert(2, for: "b", cost: 0) == [])
        #expect(cache["a"] == 1)  // "a" is now the most recent
        #expect(cache.insert(3, for: "c", cost: 0) == ["b"])
        #expect(cache.keys == ["c", "a"])
        #expect(cache["b"] == nil)
    }

    @Test func peekDoesNotChangeRecency() {
        var cache = LRUCache<String, Int>(capacity: 2)
        cache["a"] = 1
        cache["b"] = 2
        #expect(cache.peek("a") == 1)
        #expect(cache.insert(3, for: "c", cost: 0) == ["a"])
    }

    @Test func replacingAValueKeepsOneEntryAndMakesItRecent() {
        var cache = LRUCache<String, Int>(capacity: 3)
        cache["a"] = 1
        cache["b"] = 2
        cache["a"] = 10
        #expect(cache.count == 2)
        #expect(cache.keys == ["a", "b"])
        #expect(cache.peek("a") == 10)
    }

    @Test func removalUnlinksFromEveryPosition() {
        var cache = LRUCache<Int, Int>(capacity: 5)
        for key in 0..<5 { cache[key] = key }
        #expect(cache.keys == [4, 3, 2, 1, 0])
        #expect(cache.removeValue(for: 4) == 4)  // head
        #expect(cache.removeValue(for: 0) == 0)  // tail
        #expect(cache.removeValue(for: 2) == 2)  // middle
        #expect(cache.removeValue(for: 2) == nil)
        #expect(cache.keys == [3, 1])
        cache[7] = 7
        #expect(cache.keys == [7, 3, 1])
    }

    @Test func staysBoundedUnderChurn() {
        var cache = LRUCache<Int, Int>(capacity: 16)
        for key in 0..<10_000 {
            cache[key % 37] = key
            if key % 5 == 0 { _ = cache[key % 11] }
            if key % 7 == 0 { cache.removeValue(for: key % 13) }
            #expect(cache.count <= 16)
        }
        #expect(cache.keys.count == cache.count)
        #expect(Set(cache.keys).count == cache.count)
    }

    @Test func evictsTheLeastRecentlyUsedUntilTheTotalCostFits() {
        var cache = LRUCache<String, Int>(capacity: 10, maxCost: 100)
        #expect(cache.insert(1, for: "a", cost: 40) == [])
        #expect(cache.insert(2, for: "b", cost: 40) == [])
        #expect(cache.insert(3, for: "c", cost: 20) == [])
        #expect(cache.totalCost == 100)
        _ = cache["a"]  // recency: a, c, b
        #expect(cache.insert(4, for: "d", cost: 50) == ["b", "c"])
        #expect(cache.keys == ["d", "a"])
        #expect(cache.totalCost == 90)
        // Replacing a value re-counts its cost, and can evict others.
        #expect(cache.insert(5, for: "a", cost: 60) == ["d"])
        #expect(cache.keys == ["a"])
        #expect(cache.totalCost == 60)
        #expect(cache.removeValue(for: "a") == 5)
        #expect(cache.totalCost == 0)
    }

    @Test func aValueCostingMoreThanTheBudgetIsNotStoredAndDropsTheOldOne() {
        var cache = LRUCache<String, Int>(capacity: 10, maxCost: 100)
        cache.insert(1, for: "a", cost: 10)
        cache.insert(2, for: "b", cost: 10)
        #expect(cache.insert(3, for: "a", cost: 101) == [])
        #expect(cache.peek("a") == nil)
        #expect(cache.keys == ["b"])
        #expect(cache.totalCost == 10)
    }

    @Test func theCostBudgetIsClampedSoSumsCannotOverflow() {
        var cache = LRUCache<Int, Int>(capacity: 4)
        #expect(cache.maxCost == Int.max / 2)
        cache.insert(0, for: 0, cost: Int.max / 2)
        #expect(cache.insert(1, for: 1, cost: Int.max / 2) == [0])
        #expect(cache.insert(2, for: 2, cost: -5) == [])  // negative counts as zero
        #expect(cache.totalCost == Int.max / 2)
    }

    @Test func zeroCapacityKeepsNothing() {
        var cache = LRUCache<String, Int>(capacity: 0)
        #expect(cache.insert(1, for: "a", cost: 0) == [])
        #expect(cache.count == 0)
        #expect(cache["a"] == nil)
    }
}
