import Dispatch
import Reactive

/// A TTL cache of upstream responses keyed by URL, with LRU eviction and single-flight fetches.
///
/// ``publisher(for:fetch:)`` returns a publisher that, on each subscription, serves a fresh stored
/// value, or else joins the fetch already under way for the key, or else creates one. So any number
/// of concurrent misses for one key share one upstream request. The fetch is subscribed on the first
/// demand; cancelling one subscriber leaves it running for the others, and when the last one leaves
/// the fetch is cancelled (and with it the upstream transfer). A value is stored when the fetch
/// finishes; a failure is passed to every waiter and not stored. With `staleSeconds > 0`, an expired
/// value is served for that much longer while one background fetch refreshes it.
///
///     let cache = ResponseCache<Data, UpstreamError>(ttlSeconds: 30, maxEntries: 1_000)
///     cache.publisher(for: url.absoluteString) { client.fetch(url) }.sink(...)
///
/// **Ownership:** one per ``UpstreamClient``. A subscription retains the cache until it completes or
/// is cancelled; a flight's upstream retains it until it completes or is cancelled.
///
/// **Thread safety:** safe to call from any thread; one lock guards the whole state, and it is never
/// held while calling a subscriber, an upstream subscription or a fetch.
final class ResponseCache<Value: Sendable, Failure: Error>: @unchecked Sendable {
    // @unchecked Sendable: `machine` is only touched inside `lock`; everything else is immutable.
    typealias Machine = ResponseCacheStateMachine<Value, Failure>

    /// Reads the clock in nanoseconds; injectable so tests drive expiry without sleeping.
    typealias Clock = @Sendable () -> Int

    /// The system's monotonic clock in nanoseconds.
    static var uptime: Clock {
        { Int(clamping: DispatchTime.now().uptimeNanoseconds) }
    }

    private let lock = Lock()
    private var machine: Machine  // Guarded by lock.
    private let now: Clock
    private let onLookup: (@Sendable (CacheLookup) -> Void)?

    /// Creates a cache.
    ///
    /// - Parameters:
    ///   - ttlSeconds: How long a value stays fresh; zero stores nothing (fetches are still shared).
    ///   - maxEntries: The most values stored; the least recently used goes first.
    ///   - maxCost: The most total `cost` of the values stored (e.g. bytes); the least recently used go
    ///     first, and a value costing more on its own is delivered to its waiters but not stored.
    ///   - cost: What storing one value costs; nothing by default, so only `maxEntries` bounds the cache.
    ///   - staleSeconds: How long after expiry a value may still be served while it is refreshed;
    ///     zero (the default) never serves an expired value.
    ///   - now: The clock, in nanoseconds; the system's monotonic clock by default.
    ///   - onLookup: Called with the outcome of every lookup (for metrics), outside the lock.
    init(
        ttlSeconds: Double,
        maxEntries: Int,
        maxCost: Int = .max,
        cost: @escaping @Sendable (Value) -> Int = { _ in 0 },
        staleSeconds: Double = 0,
        now: @escaping Clock = ResponseCache.uptime,
        onLookup: (@Sendable (CacheLookup) -> Void)? = nil
    ) {
        machine = Machine(
            ttlNanoseconds: Self.nanoseconds(ttlSeconds),
            staleNanoseconds: Self.nanoseconds(staleSeconds),
            maxEntries: maxEntries,
            maxCost: maxCost,
            cost: cost
        )
        self.now = now
        self.onLookup = onLookup
    }

    /// The number of stored values (fresh or not yet evicted).
    var count: Int { lock.withLock { machine.count } }

    /// The summed cost of the stored values (bytes, for the upstream client's cache).
    var totalCost: Int { lock.withLock { machine.totalCost } }

    /// The number of fetches under way.
    var inFlightCount: Int { lock.withLock { machine.flightCount } }

    /// A publisher of the value for `key`: stored, shared with a fetch under way, or fetched with
    /// `fetch`. The lookup happens at each subscription.
    func publisher(
        for key: String,
        fetch: @escaping @Sendable () -> AnyPublisher<Value, Failure>
    ) -> AnyPublisher<Value, Failure> {
        CachedPublisher(cache: self, key: key, fetch: fetch).eraseToAnyPublisher()
    }

    /// Drops the stored value for `key`, e.g. when a caller found it unusable.
    func removeValue(for key: String) {
        lock.withLock { machine.remove(key) }
    }

    /// Drops every stored value.
    func removeAll() {
        lock.withLock { machine.removeAll() }
    }

    // MARK: Subscriptions

    fileprivate func subscribe<S: Subscriber>(
        _ subscriber: S,
        key: String,
        fetch: @escaping @Sendable () -> AnyPublisher<Value, Failure>
    ) where S.Input == Value, S.Failure == Failure {
        let downstream = AnySubscriber(subscriber)
        let instant = now()
        let (waiter, action) = lock.withLock {
            let waiter = machine.makeID()
            return (waiter, machine.lookup(key, now: instant, waiter: waiter, downstream: downstream, fetch: fetch))
        }
        switch action {
        case .hit(let value):
            onLookup?(.hit)
            Just(value).setFailureType(to: Failure.self).receive(subscriber: subscriber)
        case .stale(let value, let refresh):
            onLookup?(.stale)
            if let refresh { start(key: key, flight: refresh.id, fetch: refresh.fetch) }
            Just(value).setFailureType(to: Failure.self).receive(subscriber: subscriber)
        case .coalesced, .miss:
            onLookup?(action.isMiss ? .miss : .coalesced)
            subscriber.receive(subscription: CacheWaiter(cache: self, key: key, id: waiter))
        }
    }

    fileprivate func demanded(key: String, waiter: UInt64) {
        switch lock.withLock({ machine.demanded(key, waiter: waiter) }) {
        case .none:
            break
        case .start(let flight, let fetch):
            start(key: key, flight: flight, fetch: fetch)
        case .deliver(let downstream, let outcome):
            Self.deliver(outcome, to: downstream)
        }
    }

    fileprivate func cancelled(key: String, waiter: UInt64) {
        lock.withLock { machine.cancelled(key, waiter: waiter) }?.cancel()
    }

    // MARK: Flights

    private func start(key: String, flight: UInt64, fetch: @Sendable () -> AnyPublisher<Value, Failure>) {
        fetch().subscribe(FlightSubscriber(cache: self, key: key, flight: flight))
    }

    fileprivate func flightSubscribed(key: String, flight: UInt64, _ subscription: any Subscription) {
        if lock.withLock({ machine.upstreamSubscribed(key, flight: flight, subscription) }) {
            subscription.request(.unlimited)
        } else {
            subscription.cancel()
        }
    }

    fileprivate func flightReceived(key: String, flight: UInt64, _ value: Value) {
        lock.withLock { machine.upstreamValue(key, flight: flight, value) }
    }

    fileprivate func flightCompleted(key: String, flight: UInt64, _ completion: Subscribers.Completion<Failure>) {
        let instant = now()
        let deliveries = lock.withLock { machine.upstreamCompleted(key, flight: flight, completion, now: instant) }
        for (downstream, outcome) in deliveries {
            Self.deliver(outcome, to: downstream)
        }
    }

    private static func deliver(_ outcome: Machine.Outcome, to downstream: Machine.Downstream) {
        switch outcome {
        case .success(let value):
            if let value { _ = downstream.receive(value) }
            downstream.receive(completion: .finished)
        case .failure(let error):
            downstream.receive(completion: .failure(error))
        }
    }

    private static func nanoseconds(_ seconds: Double) -> Int {
        let value = (seconds * 1e9).rounded()
        guard value.isFinite, value > 0 else { return 0 }
        return value >= Double(Int.max) ? .max : Int(value)
    }
}

extension ResponseCacheStateMachine.LookupAction {
    fileprivate var isMiss: Bool {
        if case .miss = self { return true }
        return false
    }
}

/// The publisher ``ResponseCache/publisher(for:fetch:)`` returns: a lookup per subscription.
///
/// **Thread safety:** value type; safe to subscribe from any thread.
private struct CachedPublisher<Value: Sendable, Failure: Error>: Publisher {
    typealias Output = Value

    let cache: ResponseCache<Value, Failure>
    let key: String
    let fetch: @Sendable () -> AnyPublisher<Value, Failure>

    func receive<S: Subscriber>(subscriber: S) where S.Input == Value, S.Failure == Failure {
        cache.subscribe(subscriber, key: key, fetch: fetch)
    }
}

/// One subscriber's place in a flight: forwards its demand and cancel to the cache.
///
/// **Ownership:** retained by its subscriber; it retains the cache.
///
/// **Thread safety:** audited: no lock needed because every stored property is immutable; the
/// cache's lock guards the waiter's state.
private final class CacheWaiter<Value: Sendable, Failure: Error>: Subscription, CustomStringConvertible, Sendable {
    let cache: ResponseCache<Value, Failure>
    let key: String
    let id: UInt64

    init(cache: ResponseCache<Value, Failure>, key: String, id: UInt64) {
        self.cache = cache
        self.key = key
        self.id = id
    }

    var description: String { "ResponseCache" }

    func request(_ demand: Subscribers.Demand) {
        guard demand > .none else { apiViolation("ResponseCache requested a demand of zero") }
        cache.demanded(key: key, waiter: id)
    }

    func cancel() {
        cache.cancelled(key: key, waiter: id)
    }
}

/// The one subscriber of a flight's upstream fetch.
///
/// **Ownership:** retained by the fetch's subscription until it completes or is cancelled.
///
/// **Thread safety:** audited: no lock needed because every stored property is immutable.
private final class FlightSubscriber<Value: Sendable, Failure: Error>: Subscriber, Sendable {
    typealias Input = Value

    let cache: ResponseCache<Value, Failure>
    let key: String
    let flight: UInt64

    init(cache: ResponseCache<Value, Failure>, key: String, flight: UInt64) {
        self.cache = cache
        self.key = key
        self.flight = flight
    }

    func receive(subscription: any Subscription) {
        cache.flightSubscribed(key: key, flight: flight, subscription)
    }

    func receive(_ input: Value) -> Subscribers.Demand {
        cache.flightReceived(key: key, flight: flight, input)
        return .none
    }

    func receive(completion: Subscribers.Completion<Failure>) {
        cache.flightCompleted(key: key, flight: flight, completion)
    }
}
