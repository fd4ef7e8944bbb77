import Reactive

/// The state of a ``ResponseCache``: the stored entries (TTL + LRU) and the fetches in flight with
/// the subscribers waiting on each.
///
/// A flight is created by the first miss for a key and is shared by every later miss for that key
/// until it completes ("single flight"). Its upstream is subscribed on the first demand of any of
/// its waiters. It leaves the table when it completes (a value is stored, a failure is not), or
/// when its last waiter cancels (its upstream is then cancelled). A waiter whose flight completed
/// before it asked for the value holds the result until it does.
///
/// **Thread safety:** value type; its owner keeps it under a lock.
struct ResponseCacheStateMachine<Value, Failure: Error> {
    typealias Downstream = AnySubscriber<Value, Failure>
    typealias Fetch = @Sendable () -> AnyPublisher<Value, Failure>
    /// The outcome of a flight: its value (`nil` if upstream finished without one) or its failure.
    typealias Outcome = Result<Value?, Failure>

    /// A stored value and, in the owner's clock (nanoseconds), when it stops being fresh and when
    /// it stops being servable while a refresh runs.
    struct Entry {
        var value: Value
        var freshUntil: Int
        var staleUntil: Int
    }

    /// One subscriber attached to a flight.
    enum Waiter {
        /// Has not asked for the value yet. Next: `.demanding`, or held on completion.
        case waiting(Downstream)
        /// Has asked; gets the outcome when the flight completes. Final within the flight.
        case demanding(Downstream)
    }

    /// Where a flight's upstream is.
    enum Phase {
        /// Not subscribed: no waiter has asked for the value yet. Next: `.subscribing`.
        case idle
        /// Subscribed, its subscription not yet received. Next: `.running`.
        case subscribing
        /// Running; cancelled if every waiter leaves.
        case running(any Subscription)
    }

    /// One shared upstream fetch.
    struct Flight {
        let id: UInt64
        let fetch: Fetch
        /// A background refresh started by a stale hit: it runs to completion with no waiters.
        let keepAlive: Bool
        var phase = Phase.idle
        var waiters: [UInt64: Waiter] = [:]
        var value: Value?
    }

    /// What a lookup found.
    enum LookupAction {
        /// A fresh entry.
        case hit(Value)
        /// An expired entry still servable; `refresh` is a flight to start, unless one already runs.
        case stale(Value, refresh: (id: UInt64, fetch: Fetch)?)
        /// Joined the flight already under way for the key.
        case coalesced
        /// Created a flight for the key; it starts on the first demand.
        case miss
    }

    /// What a waiter's demand leads to.
    enum DemandAction {
        case none
        /// Subscribe the flight's upstream.
        case start(flight: UInt64, fetch: Fetch)
        /// The flight completed earlier; deliver its outcome now.
        case deliver(Downstream, Outcome)
    }

    let ttlNanoseconds: Int
    let staleNanoseconds: Int
    /// What storing a value costs against the cache's cost budget (e.g. its size in bytes).
    private let cost: @Sendable (Value) -> Int
    private var entries: LRUCache<String, Entry>
    private var flights: [String: Flight] = [:]
    /// Waiters whose flight completed before they asked for the value.
    private var held: [UInt64: (Downstream, Outcome)] = [:]
    private var nextID: UInt64 = 0

    /// - Parameters:
    ///   - ttlNanoseconds: How long a value stays fresh; zero or less stores nothing.
    ///   - staleNanoseconds: How long after that it may still be served while a refresh runs.
    ///   - maxEntries: The most values stored; the least recently used goes first.
    ///   - maxCost: The most total `cost` of the values stored; the least recently used go first, and a
    ///     value costing more on its own is delivered but not stored.
    ///   - cost: What one value costs (e.g. its size in bytes).
    init(
        ttlNanoseconds: Int,
        staleNanoseconds: Int,
        maxEntries: Int,
        maxCost: Int = .max,
        cost: @escaping @Sendable (Value) -> Int = { _ in 0 }
    ) {
        self.ttlNanoseconds = ttlNanoseconds
        self.staleNanoseconds = max(0, staleNanoseconds)
        self.cost = cost
        entries = LRUCache(capacity: ttlNanoseconds > 0 ? maxEntries : 0, maxCost: maxCost)
    }

    /// The summed cost of the stored values.
    var totalCost: Int { entries.totalCost }

    /// The number of stored values.
    var count: Int { entries.count }

    /// The number of flights under way.
    var flightCount: Int { flights.count }

    /// A fresh identifier for a waiter or a flight.
    mutating func makeID() -> UInt64 {
        nextID &+= 1
        return nextID
    }

    /// A subscriber looks `key` up at `now`; on a miss it is attached (as waiter `waiter`) to the
    /// key's flight, created with `fetch` if there is none.
    mutating func lookup(
        _ key: String,
        now: Int,
        waiter: UInt64,
        downstream: Downstream,
        fetch: @escaping Fetch
    ) -> LookupAction {
        if let entry = entries[key] {
            if now < entry.freshUntil { return .hit(entry.value) }
            if now < entry.staleUntil {
                guard flights[key] == nil else { return .stale(entry.value, refresh: nil) }
                let id = makeID()
                flights[key] = Flight(id: id, fetch: fetch, keepAlive: true, phase: .subscribing)
                return .stale(entry.value, refresh: (id, fetch))
            }
            entries.removeValue(for: key)
        }
        if flights[key] != nil {
            flights[key]?.waiters[waiter] = .waiting(downstream)
            return .coalesced
        }
        var flight = Flight(id: makeID(), fetch: fetch, keepAlive: false)
        flight.waiters[waiter] = .waiting(downstream)
        flights[key] = flight
        return .miss
    }

    /// Waiter `waiter` of `key` asked for the value.
    mutating func demanded(_ key: String, waiter: UInt64) -> DemandAction {
        if var flight = flights[key], let state = flight.waiters[waiter] {
            guard case .waiting(let downstream) = state else { return .none }
            flight.waiters[waiter] = .demanding(downstream)
            var action = DemandAction.none
            if case .idle = flight.phase {
                flight.phase = .subscribing
                action = .start(flight: flight.id, fetch: flight.fetch)
            }
            flights[key] = flight
            return action
        }
        if let (downstream, outcome) = held.removeValue(forKey: waiter) {
            return .deliver(downstream, outcome)
        }
        return .none
    }

    /// Waiter `waiter` of `key` cancelled; returns the upstream to cancel if it was the last one.
    mutating func cancelled(_ key: String, waiter: UInt64) -> (any Subscription)? {
        held.removeValue(forKey: waiter)
        guard var flight = flights[key], flight.waiters.removeValue(forKey: waiter) != nil else { return nil }
        guard flight.waiters.isEmpty, !flight.keepAlive else {
            flights[key] = flight
            return nil
        }
        // The flight leaves the table now, so a later miss starts afresh; a subscription still on
        // its way is refused in `upstreamSubscribed`.
        flights[key] = nil
        if case .running(let subscription) = flight.phase { return subscription }
        return nil
    }

    /// The upstream of flight `id` handed over its subscription; `false` means cancel it (the flight
    /// was abandoned meanwhile).
    mutating func upstreamSubscribed(_ key: String, flight id: UInt64, _ subscription: any Subscription) -> Bool {
        guard flights[key]?.id == id else { return false }
        flights[key]?.phase = .running(subscription)
        return true
    }

    /// The upstream of flight `id` sent a value; only the first is kept.
    mutating func upstreamValue(_ key: String, flight id: UInt64, _ value: Value) {
        guard flights[key]?.id == id, flights[key]?.value == nil else { return }
        flights[key]?.value = value
    }

    /// The upstream of flight `id` completed at `now`: stores a value, ends the flight and returns
    /// the waiters to deliver the outcome to (the others hold it until they ask).
    mutating func upstreamCompleted(
        _ key: String,
        flight id: UInt64,
        _ completion: Subscribers.Completion<Failure>,
        now: Int
    ) -> [(Downstream, Outcome)] {
        guard let flight = flights[key], flight.id == id else { return [] }
        flights[key] = nil
        let outcome: Outcome
        switch completion {
        case .failure(let error):
            outcome = .failure(error)
        case .finished:
            outcome = .success(flight.value)
            if let value = flight.value, ttlNanoseconds > 0 {
                let fresh = Self.adding(now, ttlNanoseconds)
                let entry = Entry(value: value, freshUntil: fresh, staleUntil: Self.adding(fresh, staleNanoseconds))
                entries.insert(entry, for: key, cost: cost(value))
            }
        }
        var deliveries: [(Downstream, Outcome)] = []
        for (waiter, state) in flight.waiters {
            switch state {
            case .waiting(let downstream): held[waiter] = (downstream, outcome)
            case .demanding(let downstream): deliveries.append((downstream, outcome))
            }
        }
        return deliveries
    }

    /// Drops the stored value for `key` (a flight under way is left alone).
    mutating func remove(_ key: String) {
        entries.removeValue(for: key)
    }

    /// Drops every stored value.
    mutating func removeAll() {
        entries = LRUCache(capacity: entries.capacity, maxCost: entries.maxCost)
    }

    private static func adding(_ a: Int, _ b: Int) -> Int {
        let (sum, overflow) = a.addingReportingOverflow(b)
        return overflow ? .max : sum
    }
}
