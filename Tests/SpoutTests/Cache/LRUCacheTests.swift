import Testing

@testable import Spout

@Suite struct LRUCacheTests {
    @Test func evictsTheLeastRecentlyUsedWhenFull() {
        var cache = LRUCache<String, Int>(capacity: 2)
        #expect(cache.insert(1, for: "a") == nil)
        #expect(cache.insert(2, for: "b") == nil)
        #expect(cache["a"] == 1)  // "a" is now the most recent
        #expect(cache.insert(3, for: "c") == "b")
        #expect(cache.keys == ["c", "a"])
        #expect(cache["b"] == nil)
    }

    @Test func peekDoesNotChangeRecency() {
        var cache = LRUCache<String, Int>(capacity: 2)
        cache["a"] = 1
        cache["b"] = 2
        #expect(cache.peek("a") == 1)
        #expect(cache.insert(3, for: "c") == "a")
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

    @Test func zeroCapacityKeepsNothing() {
        var cache = LRUCache<String, Int>(capacity: 0)
        #expect(cache.insert(1, for: "a") == nil)
        #expect(cache.count == 0)
        #expect(cache["a"] == nil)
    }
}
