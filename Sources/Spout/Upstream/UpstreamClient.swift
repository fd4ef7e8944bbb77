import Foundation
import Reactive
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Spout's outbound client for the JSON API behind its article routes.
///
/// Each call is a lazily started publisher: nothing goes on the network until a subscriber asks
/// for the value, and cancelling the subscription cancels the `URLSessionTask`. One `GET` goes
/// through, from the caller up:
///
/// 1. the ``ResponseCache``, keyed by absolute URL: a fresh body is served from memory, and
///    concurrent misses for one URL share one upstream request (single flight);
/// 2. the overall deadline (`upstream.deadlineSeconds`): a `timeout` that fails with
///    ``UpstreamError/timeout(url:seconds:)`` and cancels whatever attempt or backoff wait is running;
/// 3. `retry(_:withBackoff:)`: up to `upstream.attempts` attempts with full-jitter exponential backoff
///    (`upstream.baseDelayMilliseconds`, capped at `upstream.maxDelayMilliseconds`), for retryable
///    failures only (``UpstreamError/isRetryable``), waiting the `Retry-After` of a 429/503 instead
///    when there is one — and not retrying at all when that wait would outlast the deadline;
/// 4. one attempt: `URLSession.dataTaskPublisher` → status check (`tryMap`) → `mapError` into
///    ``UpstreamError``, bounded by `upstream.attemptTimeoutSeconds`.
///
/// A failure after more than one attempt is ``UpstreamError/gaveUp(attempts:lastStatus:error:)``,
/// so the problem a route renders says what was tried. Only `GET`s are sent: they are idempotent,
/// which is what makes retrying and sharing them safe.
///
///     client.get([Post].self, "/posts", query: [URLQueryItem(name: "userId", value: "1")])
///         .sink(receiveCompletion: { print($0) }, receiveValue: { print($0.count) })
///
/// **Ownership:** one per service, created by ``SpoutService``; routes share it.
///
/// **Thread safety:** safe to call from any thread. The base URL is set once, before traffic.
public final class UpstreamClient: Sendable {
    /// The settings calls follow (attempts, backoff, deadline, cache).
    public let configuration: SpoutConfiguration.Upstream
    /// The bodies of successful `GET`s, keyed by absolute URL.
    public let cache: ResponseCache<Data, UpstreamError>
    let session: URLSession
    private let base: Mutex<URL?>
    let metrics: SpoutMetrics?
    /// Runs the attempt timeouts and the deadline.
    let timers = DispatchQueue.global()
    /// `retry(_:withBackoff:…)` on the injected scheduler, type-erased so the client is not generic.
    let retrying: @Sendable (AnyPublisher<Data, UpstreamError>, RetryPolicy) -> AnyPublisher<Data, UpstreamError>

    /// Creates a client whose backoff waits run on a global dispatch queue and whose cache uses the
    /// system's monotonic clock.
    ///
    /// - Parameters:
    ///   - configuration: Attempts, timeouts and cache settings.
    ///   - baseURL: The API root; `nil` until ``setBaseURL(_:)`` is called (the demo upstream is
    ///     only known once the service has bound its port).
    ///   - metrics: Where to count requests, retries, cache lookups and latency; `nil` counts nothing.
    public convenience init(configuration: SpoutConfiguration.Upstream, baseURL: URL?, metrics: SpoutMetrics? = nil) {
        self.init(
            configuration: configuration,
            baseURL: baseURL,
            metrics: metrics,
            backoffScheduler: DispatchQueue.global(),
            cacheClock: ResponseCache<Data, UpstreamError>.uptime
        )
    }

    /// Creates a client with an injected backoff scheduler and cache clock (tests drive both with
    /// virtual time).
    ///
    /// - Parameters:
    ///   - backoffScheduler: Times the waits between attempts and subscribes the retries.
    ///   - cacheClock: The cache's clock, in nanoseconds.
    public init<S: Scheduler & Sendable>(
        configuration: SpoutConfiguration.Upstream,
        baseURL: URL?,
        metrics: SpoutMetrics?,
        backoffScheduler: S,
        cacheClock: @escaping ResponseCache<Data, UpstreamError>.Clock
    ) {
        self.configuration = configuration
        let sessionConfiguration = URLSessionConfiguration.ephemeral
        // Our own timers enforce the attempt timeout and the deadline exactly; URLSession's are only
        // a backstop, in whole seconds and a second later, because the libcurl-based URLSession
        // turns a sub-second interval into an immediate timeout.
        sessionConfiguration.timeoutIntervalForRequest = Self.backstop(configuration.attemptTimeoutSeconds)
        sessionConfiguration.timeoutIntervalForResource = Self.backstop(configuration.deadlineSeconds)
        sessionConfiguration.requestCachePolicy = .reloadIgnoringLocalCacheData
        // No URLCache (the ResponseCache caches): on Linux, cancelling a task of a session with one can
        // trap inside FoundationNetworking, so only cache-less sessions get their tasks cancelled
        // (URLSessionTask.cancelUnlessCached(in:)), which is what cuts off a client's upstream calls.
        sessionConfiguration.urlCache = nil
        sessionConfiguration.httpAdditionalHeaders = ["Accept": "application/json", "User-Agent": "spout"]
        // No base URL yet means the service's own demo routes: mark the calls so they are not counted as traffic.
        if baseURL == nil { sessionConfiguration.httpAdditionalHeaders?[SelfCall.headerName] = SelfCall.token }
        self.session = URLSession(configuration: sessionConfiguration)
        self.base = Mutex(baseURL)
        self.metrics = metrics
        var onLookup: (@Sendable (CacheLookup) -> Void)?
        if let metrics {
            onLookup = { lookup in metrics.upstreamCache.increment([lookup.rawValue]) }
        }
        self.cache = ResponseCache<Data, UpstreamError>(
            ttlSeconds: configuration.cacheTTLSeconds,
            maxEntries: configuration.cacheMaxEntries,
            maxCost: configuration.cacheMaxBytes,
            cost: { body in body.count },
            staleSeconds: configuration.cacheStaleSeconds,
            now: cacheClock,
            onLookup: onLookup
        )
        if let metrics {
            metrics.upstreamCacheBytes.sample { [weak cache] in cache?.totalCost ?? 0 }
        }
        self.retrying = { attempt, policy in
            attempt
                .retry(
                    policy.maxRetries,
                    withBackoff: policy.backoff,
                    scheduler: backoffScheduler,
                    shouldRetry: policy.shouldRetry,
                    retryAfter: policy.retryAfter
                )
                .eraseToAnyPublisher()
        }
    }

    /// A URLSession timeout that never fires before ours: whole seconds, one more than `seconds`.
    static func backstop(_ seconds: Double) -> TimeInterval {
        guard seconds.isFinite, seconds > 0 else { return 60 }
        return min(seconds, 86_400).rounded(.up) + 1
    }

    /// Points the client at `url` (used once the demo upstream's port is known).
    public func setBaseURL(_ url: URL) {
        base.withLock { $0 = url }
    }

    /// The API root calls go to.
    public var baseURL: URL? { base.withLock { $0 } }

    /// The absolute URL of `path` (e.g. `/posts/1`) with `query` under the base URL.
    public func url(_ path: String, query: [URLQueryItem] = []) -> URL? {
        guard let baseURL, var components = URLComponents(url: baseURL, resolvingAgainstBaseURL: false) else {
            return nil
        }
        let prefix = components.path.hasSuffix("/") ? String(components.path.dropLast()) : components.path
        components.path = prefix + (path.hasPrefix("/") ? path : "/" + path)
        components.queryItems = query.isEmpty ? nil : query
        return components.url
    }

    /// `GET path`: the body of a 2xx response, from the cache or shared with a request under way
    /// when possible, else fetched with retries within the deadline.
    public func get(_ path: String, query: [URLQueryItem] = []) -> AnyPublisher<Data, UpstreamError> {
        guard let url = url(path, query: query) else {
            return Fail(error: .unreachable(url: path, reason: "no upstream base URL is configured"))
                .eraseToAnyPublisher()
        }
        return cache.publisher(for: url.absoluteString) { [self] in fetch(url) }
    }

    /// `GET path`, decoded as JSON into `type`.
    public func get<T: Decodable>(
        _ type: T.Type,
        _ path: String,
        query: [URLQueryItem] = []
    ) -> AnyPublisher<T, UpstreamError> {
        let name = url(path, query: query)?.absoluteString ?? path
        return get(path, query: query)
            .mapError { $0 as any Error }
            .decode(type: T.self, decoder: JSONDecoder())
            .mapError { [cache] error in
                if let upstream = error as? UpstreamError { return upstream }
                // A body that does not decode is not served again from the cache.
                cache.removeValue(for: name)
                return .badBody(url: name, reason: Self.describe(decoding: error))
            }
            .eraseToAnyPublisher()
    }

    /// A short, readable reason for a decoding failure (the key path and what was wrong).
    static func describe(decoding error: any Error) -> String {
        guard let error = error as? DecodingError else { return String(describing: error) }
        func path(_ context: DecodingError.Context) -> String {
            let keys = context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }
            return keys.isEmpty ? "the top level" : keys.joined(separator: ".")
        }
        switch error {
        case .dataCorrupted(let context): return "malformed JSON at \(path(context))"
        case .keyNotFound(let key, let context): return "missing key \"\(key.stringValue)\" at \(path(context))"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return "unexpected value at \(path(context)): \(context.debugDescription)"
        @unknown default: return String(describing: error)
        }
    }
}
