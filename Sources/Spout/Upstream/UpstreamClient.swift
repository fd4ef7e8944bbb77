import Foundation
import Reactive
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Spout's outbound client for the JSON API behind its article routes.
///
/// Each call is a lazily started publisher: nothing goes on the network until a subscriber asks
/// for the value, and cancelling the subscription cancels the `URLSessionTask`. The path of one
/// call is `URLSession.dataTaskPublisher` → status check (`tryMap`) → `decode` → `mapError` into
/// ``UpstreamError``.
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
    private let session: URLSession
    private let base: Mutex<URL?>

    /// Creates a client.
    ///
    /// - Parameters:
    ///   - configuration: Attempts, timeouts and cache settings.
    ///   - baseURL: The API root; `nil` until ``setBaseURL(_:)`` is called (the demo upstream is
    ///     only known once the service has bound its port).
    public init(configuration: SpoutConfiguration.Upstream, baseURL: URL?) {
        self.configuration = configuration
        let sessionConfiguration = URLSessionConfiguration.ephemeral
        sessionConfiguration.timeoutIntervalForRequest = configuration.attemptTimeoutSeconds
        sessionConfiguration.timeoutIntervalForResource = configuration.deadlineSeconds
        sessionConfiguration.requestCachePolicy = .reloadIgnoringLocalCacheData
        sessionConfiguration.httpAdditionalHeaders = ["Accept": "application/json", "User-Agent": "spout"]
        self.session = URLSession(configuration: sessionConfiguration)
        self.base = Mutex(baseURL)
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

    /// `GET path`: the body of a 2xx response.
    public func get(_ path: String, query: [URLQueryItem] = []) -> AnyPublisher<Data, UpstreamError> {
        guard let url = url(path, query: query) else {
            return Fail(error: .unreachable(url: path, reason: "no upstream base URL is configured"))
                .eraseToAnyPublisher()
        }
        let name = url.absoluteString
        let timeout = configuration.attemptTimeoutSeconds
        return session.dataTaskPublisher(for: url)
            .mapError { UpstreamError($0, url: name, timeoutSeconds: timeout) as any Error }
            .tryMap { data, response -> Data in
                guard let http = response as? HTTPURLResponse else {
                    throw UpstreamError.badBody(url: name, reason: "not an HTTP response")
                }
                guard (200..<300).contains(http.statusCode) else {
                    let retryAfter = UpstreamError.retryAfter(http.value(forHTTPHeaderField: "Retry-After"))
                    throw UpstreamError.status(url: name, code: http.statusCode, retryAfter: retryAfter)
                }
                return data
            }
            .mapError { $0 as? UpstreamError ?? .badBody(url: name, reason: String(describing: $0)) }
            .eraseToAnyPublisher()
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
            .mapError { error in
                if let upstream = error as? UpstreamError { return upstream }
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
