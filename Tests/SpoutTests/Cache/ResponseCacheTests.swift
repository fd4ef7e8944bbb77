import Dispatch
import Reactive
import Synchronization
import TestSupport
import Testing

@testable import Spout

/// The cache with a scripted upstream: a subject per fetch, counted, so every step is deterministic.
@Suite struct ResponseCacheTests {
    struct Failed: Error, Equatable {}

    /// Hands out one subject per fetch and records what happened to it.
    final class Upstream: @unchecked Sendable {
        // @unchecked Sendable: every property is guarded by `lock`.
        private let lock = Lock()
        private var subjects: [PassthroughSubject<String, Failed>] = []
        private var cancels = 0

        var fetches: Int { lock.withLock { subjects.count } }
        var cancelled: Int { lock.withLock { cancels } }

        func fetch() -> AnyPublisher<String, Failed> {
            let subject = PassthroughSubject<String, Failed>()
            lock.withLock { subjects.append(subject) }
            return
                subject
                .handleEvents(receiveCancel: { [self] in lock.withLock { cancels += 1 } })
                .eraseToAnyPublisher()
        }

        /// Answers fetch `index` (from 0) with `value`, or fails it.
        func answer(_ index: Int, with value: String?) {
            let subject = lock.withLock { subjects[index] }
            if let value {
                subject.send(value)
                subject.send(completion: .finished)
            } else {
                subject.send(completion: .failure(Failed()))
            }
        }
    }

    final class Lookups: Sendable {
        let recorded = LockedState<[CacheLookup]>([])
        var all: [CacheLookup] { recorded.withLock { $0 } }
        func count(_ lookup: CacheLookup) -> Int { all.filter { $0 == lookup }.count }
    }

    private static func makeCache(
        ttl: Double = 10,
        maxEntries: Int = 100,
        stale: Double = 0,
        clock: VirtualTimeScheduler = VirtualTimeScheduler(),
        lookups: Lookups = Lookups()
    ) -> ResponseCache<String, Failed> {
        ResponseCache(
            ttlSeconds: ttl,
            maxEntries: maxEntries,
            staleSeconds: stale,
            now: { clock.now.nanoseconds },
            onLookup: { lookup in lookups.recorded.withLock { $0.append(lookup) } }
        )
    }

    private static func subscribe(
        _ cache: ResponseCache<String, Failed>,
        _ key: String,
        _ upstream: Upstream,
        demand: Subscribers.Demand? = .unlimited
    ) -> TrackingSubscriber<String, Failed> {
        let subscriber = TrackingSubscriber<String, Failed>(initialDemand: demand)
        cache.publisher(for: key) { upstream.fetch() }.subscribe(subscriber)
        return subscriber
    }

    @Test func hitWithinTheTTLAndMissAfterExpiryOnAVirtualClock() {
        let clock = VirtualTimeScheduler()
        let lookups = Lookups()
        let cache = Self.makeCache(ttl: 10, clock: clock, lookups: lookups)
        let upstream = Upstream()

        let first = Self.subscribe(cache, "/posts/1", upstream)
        upstream.answer(0, with: "one")
        #expect(first.history == [.subscription, .value("one"), .completion(.finished)])

        clock.advance(by: .seconds(9.999))
        let second = Self.subscribe(cache, "/posts/1", upstream)
        #expect(second.history == [.subscription, .value("one"), .completion(.finished)])
        #expect(upstream.fetches == 1)

        clock.advance(by: .milliseconds(1))
        let third = Self.subscribe(cache, "/posts/1", upstream)
        #expect(upstream.fetches == 2)
        upstream.answer(1, with: "two")
        #expect(third.values == ["two"])
        #expect(lookups.all == [.miss, .hit, .miss])
    }

    @Test func storedBodiesStayWithinTheCostBudgetLeastRecentlyUsedFirst() {
        let cache = ResponseCache<String, Failed>(ttlSeconds: 10, maxEntries: 100, maxCost: 10, cost: { $0.utf8.count })
        let upstream = Upstream()
        for (index, (key, body)) in [("/a", "aaaa"), ("/b", "bbbb"), ("/c", "cccc")].enumerated() {
            let subscriber = Self.subscribe(cache, key, upstream)
            upstream.answer(index, with: body)
            #expect(subscriber.values == [body])
        }
        // 12 bytes do not fit in 10: the least recently used body ("/a") went.
        #expect(cache.count == 2)
        #expect(cache.totalCost == 8)
        #expect(Self.subscribe(cache, "/c", upstream).values == ["cccc"])
        #expect(upstream.fetches == 3)
        _ = Self.subscribe(cache, "/a", upstream)
        #expect(upstream.fetches == 4)

        // A body larger than the whole budget reaches its waiters but is not stored.
        let big = Self.subscribe(cache, "/big", upstream)
        upstream.answer(4, with: String(repeating: "x", count: 11))
        #expect(big.values == [String(repeating: "x", count: 11)])
        _ = Self.subscribe(cache, "/big", upstream)
        #expect(upstream.fetches == 6)
        #expect(cache.totalCost <= 10)
    }

    @Test func keysAreSeparate() {
        let cache = Self.makeCache()
        let upstream = Upstream()
        let a = Self.subscribe(cache, "/a", upstream)
        let b = Self.subscribe(cache, "/b", upstream)
        #expect(upstream.fetches == 2)
        upstream.answer(1, with: "b")
        upstream.answer(0, with: "a")
        #expect(a.values == ["a"])
        #expect(b.values == ["b"])
    }

    @Test func hundredConcurrentMissesShareOneFetch() {
        let lookups = Lookups()
        let cache = Self.makeCache(lookups: lookups)
        let upstream = Upstream()
        let subscribers = LockedState<[TrackingSubscriber<String, Failed>]>([])
        DispatchQueue.concurrentPerform(iterations: 100) { _ in
            let subscriber = Self.subscribe(cache, "/posts", upstream)
            subscribers.withLock { $0.append(subscriber) }
        }
        #expect(upstream.fetches == 1)
        #expect(cache.inFlightCount == 1)
        upstream.answer(0, with: "posts")
        let all = subscribers.withLock { $0 }
        #expect(all.count == 100)
        #expect(all.allSatisfy { $0.history == [.subscription, .value("posts"), .completion(.finished)] })
        #expect(lookups.count(.miss) == 1)
        #expect(lookups.count(.coalesced) == 99)
        #expect(cache.inFlightCount == 0)
        #expect(Self.subscribe(cache, "/posts", upstream).values == ["posts"])
        #expect(upstream.fetches == 1)
    }

    @Test func aFailureReachesEveryWaiterAndIsNotStored() {
        let cache = Self.makeCache()
        let upstream = Upstream()
        let a = Self.subscribe(cache, "/x", upstream)
        let b = Self.subscribe(cache, "/x", upstream)
        upstream.answer(0, with: nil)
        #expect(a.history == [.subscription, .completion(.failure(Failed()))])
        #expect(b.history == [.subscription, .completion(.failure(Failed()))])
        #expect(cache.count == 0)
        _ = Self.subscribe(cache, "/x", upstream)
        #expect(upstream.fetches == 2)
    }

    @Test func theFetchStartsOnTheFirstDemand() {
        let cache = Self.makeCache()
        let upstream = Upstream()
        let idle = Self.subscribe(cache, "/x", upstream, demand: nil)
        #expect(upstream.fetches == 0)
        idle.request(.max(1))
        #expect(upstream.fetches == 1)
    }

    @Test func aWaiterWithoutDemandHoldsTheValueUntilItAsks() {
        let cache = Self.makeCache()
        let upstream = Upstream()
        let eager = Self.subscribe(cache, "/x", upstream)
        let lazy = Self.subscribe(cache, "/x", upstream, demand: nil)
        upstream.answer(0, with: "x")
        #expect(eager.values == ["x"])
        #expect(lazy.history == [.subscription])
        lazy.request(.max(1))
        #expect(lazy.history == [.subscription, .value("x"), .completion(.finished)])
    }

    @Test func cancellingOneWaiterLeavesTheFetchToTheOthers() {
        let cache = Self.makeCache()
        let upstream = Upstream()
        let leaving = Self.subscribe(cache, "/x", upstream)
        let staying = Self.subscribe(cache, "/x", upstream)
        leaving.cancel()
        #expect(upstream.cancelled == 0)
        upstream.answer(0, with: "x")
        #expect(staying.values == ["x"])
        #expect(leaving.history == [.subscription])
    }

    @Test func whenEveryWaiterLeavesTheFetchIsCancelledAndTheNextMissStartsAfresh() {
        let cache = Self.makeCache()
        let upstream = Upstream()
        let a = Self.subscribe(cache, "/x", upstream)
        let b = Self.subscribe(cache, "/x", upstream)
        a.cancel()
        b.cancel()
        #expect(upstream.cancelled == 1)
        #expect(cache.inFlightCount == 0)
        let c = Self.subscribe(cache, "/x", upstream)
        #expect(upstream.fetches == 2)
        upstream.answer(1, with: "fresh")
        #expect(c.values == ["fresh"])
    }

    @Test func evictsTheLeastRecentlyUsedAtMaxEntries() {
        let lookups = Lookups()
        let cache = Self.makeCache(maxEntries: 2, lookups: lookups)
        let upstream = Upstream()
        for (index, key) in ["/a", "/b"].enumerated() {
            _ = Self.subscribe(cache, key, upstream)
            upstream.answer(index, with: key)
        }
        _ = Self.subscribe(cache, "/a", upstream)  // hit: "/a" is now the most recent
        _ = Self.subscribe(cache, "/c", upstream)
        upstream.answer(2, with: "/c")  // evicts "/b"
        #expect(cache.count == 2)
        _ = Self.subscribe(cache, "/a", upstream)
        _ = Self.subscribe(cache, "/b", upstream)
        #expect(lookups.all == [.miss, .miss, .hit, .miss, .hit, .miss])
        #expect(upstream.fetches == 4)
    }

    @Test func servesStaleWhileOneRefreshRuns() {
        let clock = VirtualTimeScheduler()
        let lookups = Lookups()
        let cache = Self.makeCache(ttl: 10, stale: 5, clock: clock, lookups: lookups)
        let upstream = Upstream()
        _ = Self.subscribe(cache, "/x", upstream)
        upstream.answer(0, with: "old")

        clock.advance(by: .seconds(12))
        #expect(Self.subscribe(cache, "/x", upstream).values == ["old"])
        #expect(Self.subscribe(cache, "/x", upstream).values == ["old"])
        #expect(upstream.fetches == 2)  // one refresh for both stale reads
        upstream.answer(1, with: "new")
        #expect(Self.subscribe(cache, "/x", upstream).values == ["new"])
        #expect(lookups.all == [.miss, .stale, .stale, .hit])

        clock.advance(by: .seconds(16))  // past fresh and stale: a plain miss
        _ = Self.subscribe(cache, "/x", upstream)
        #expect(lookups.all.last == .miss)
    }

    @Test func zeroTTLStoresNothingButStillSharesFetches() {
        let cache = Self.makeCache(ttl: 0)
        let upstream = Upstream()
        let a = Self.subscribe(cache, "/x", upstream)
        let b = Self.subscribe(cache, "/x", upstream)
        #expect(upstream.fetches == 1)
        upstream.answer(0, with: "x")
        #expect(a.values == ["x"] && b.values == ["x"])
        _ = Self.subscribe(cache, "/x", upstream)
        #expect(upstream.fetches == 2)
    }

    @Test func raceOfSubscribeAndCancelLeavesNoFlightBehind() {
        let cache = Self.makeCache()
        let upstream = Upstream()
        DispatchQueue.concurrentPerform(iterations: 200) { index in
            let subscriber = Self.subscribe(cache, "/k\(index % 4)", upstream)
            subscriber.cancel()
        }
        #expect(cache.inFlightCount == 0)
        #expect(upstream.cancelled == upstream.fetches)
    }
}

extension ResponseCacheTests {
    @Test func subscribersAreReleasedAfterCompletionAndCancel() {
        let cache = Self.makeCache()
        let upstream = Upstream()
        weak var completed: TrackingSubscriber<String, Failed>?
        weak var cancelled: TrackingSubscriber<String, Failed>?
        do {
            let a = Self.subscribe(cache, "/x", upstream)
            let b = Self.subscribe(cache, "/x", upstream)
            completed = a
            cancelled = b
            b.cancel()
            upstream.answer(0, with: "x")
        }
        #expect(completed == nil)
        #expect(cancelled == nil)
        #expect(cache.inFlightCount == 0)
    }
}
