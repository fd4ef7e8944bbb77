import Foundation
import Reactive
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Spout's outbound client for the JSON API behind its article routes.
///
/// Each call is a lazily started publisher: nothing goes on the network until a subscriber asks
/// for the value, and cancelling the subscription ends the transfer and closes its connection. One `GET` goes
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
/// 4. one attempt: a ``BodyTransfer`` (the data task, its body read up to `upstream.maxBodyBytes`) →
///    status check (`tryMap`) → `mapError` into ``UpstreamError``, bounded by
///    `upstream.attemptTimeoutSeconds`.
///
/// The transfers run on the ``UpstreamSession``'s ``CurlDriver`` thread (libcurl's multi interface, not
/// `URLSession`): starting and cancelling one only hand that thread a command, so a route that subscribes
/// on an event loop, a client leaving, and the deadline's timer all return at once whatever the upstream
/// does; the deadline fails the call when it fires, and the transfer's connection is closed at the
/// thread's next turn.
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
final class UpstreamClient: Sendable {
    /// The settings calls follow (attempts, backoff, deadline, cache).
    let configuration: SpoutConfiguration.Upstream
    /// The bodies of successful `GET`s, keyed by absolute URL.
    let cache: ResponseCache<Data, UpstreamError>
    /// Where the transfers run.
    let session: UpstreamSession
    private let base: LockedState<URL?>
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
    convenience init(
        configuration: SpoutConfiguration.Upstream,
        baseURL: URL?,
        metrics: SpoutMetrics? = nil
    ) {
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
    init<S: Scheduler & Sendable>(
        configuration: SpoutConfiguration.Upstream,
        baseURL: URL?,
        metrics: SpoutMetrics?,
        backoffScheduler: S,
        cacheClock: @escaping ResponseCache<Data, UpstreamError>.Clock
    ) {
        self.configuration = configuration
        self.session = UpstreamSession(
            // No base URL yet means the service's own demo routes: mark the calls so they are not counted as traffic.
            additionalHeaders: baseURL == nil ? [SelfCall.headerName: SelfCall.token] : [:]
        )
        self.base = LockedState(baseURL)
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
            metrics.upstreamTransfersOpen.sample { [weak session] in session?.runningTransfers ?? 0 }
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

    /// A libcurl time limit that never fires before ours: whole seconds, one more than `seconds`.
    static func backstop(_ seconds: Double) -> TimeInterval {
        guard seconds.isFinite, seconds > 0 else { return 60 }
        return min(seconds, 86_400).rounded(.up) + 1
    }

    /// Points the client at `url` (used once the demo upstream's port is known).
    func setBaseURL(_ url: URL) {
        base.withLock { $0 = url }
    }

    /// The API root calls go to.
    var baseURL: URL? { base.withLock { $0 } }

    /// The absolute URL of `path` (e.g. `/posts/1`) with `query` under the base URL.
    func url(_ path: String, query: [URLQueryItem] = []) -> URL? {
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
    ///
    /// - Parameters:
    ///   - headers: Extra request header fields for this call (`X-Request-ID`, `traceparent`,
    ///     `tracestate`), over the session's `Accept` and `User-Agent`. A field whose name is not an HTTP
    ///     token or whose value holds a control character is dropped. Calls share a fetch when their
    ///     URLs are equal (single flight), whatever their headers: a shared fetch carries the headers of
    ///     the call that started it (the first miss), and a cache hit sends nothing.
    func get(
        _ path: String,
        query: [URLQueryItem] = [],
        headers: [String: String] = [:]
    ) -> AnyPublisher<Data, UpstreamError> {
        guard let url = url(path, query: query) else {
            let target = UpstreamTarget(url: path, resource: path)
            return Fail(error: .unreachable(target, reason: "no upstream base URL is configured"))
                .eraseToAnyPublisher()
        }
        let target = UpstreamTarget(url: url, base: baseURL)
        let headers = Self.forwardable(headers)
        return cache.publisher(for: url.absoluteString) { [self] in fetch(url, target: target, headers: headers) }
            .handleEvents(receiveOutput: { body in
                // Decoding and rendering a large body (from the upstream or the cache) leave megabytes of
                // freed heap in the arena of whichever thread did it: hand them back once done.
                if body.count >= BodyTransfer.largeBodyBytes { MemoryReturn.shared.largeBufferReleased() }
            })
            .eraseToAnyPublisher()
    }

    /// `GET path`, decoded as JSON into `type`; see ``get(_:query:headers:)``.
    func get<T: Decodable>(
        _ type: T.Type,
        _ path: String,
        query: [URLQueryItem] = [],
        headers: [String: String] = [:]
    ) -> AnyPublisher<T, UpstreamError> {
        let url = url(path, query: query)
        let target = url.map { UpstreamTarget(url: $0, base: baseURL) } ?? UpstreamTarget(url: path, resource: path)
        return get(path, query: query, headers: headers)
            .mapError { $0 as any Error }
            .decode(type: T.self, decoder: JSONDecoder())
            .mapError { [cache] error in
                if let upstream = error as? UpstreamError { return upstream }
                // A body that does not decode is not served again from the cache.
                cache.removeValue(for: target.url)
                return .badBody(target, reason: Self.describe(decoding: error))
            }
            .eraseToAnyPublisher()
    }

    /// Ends the transfers under way (as cancelled) and fails later calls as unreachable. For the service's
    /// shutdown.
    func shutdown() {
        session.invalidate()
    }

    /// The fields of `headers` that are safe to put on a request: names that are HTTP tokens, values
    /// without control characters (no CR or LF that could start a field of their own), both short.
    static func forwardable(_ headers: [String: String]) -> [String: String] {
        guard !headers.isEmpty else { return headers }
        return headers.filter { name, value in
            let isToken =
                !name.isEmpty && name.utf8.count <= 64
                && name.utf8.allSatisfy { byte in
                    (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                        || "!#$%&'*+-.^_`|~".utf8.contains(byte)
                }
            let isValue = value.utf8.count <= 1024 && value.utf8.allSatisfy { $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }
            return isToken && isValue
        }
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
