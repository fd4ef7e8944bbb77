/// Matches a request's method and path against registered patterns such as `/sequences/{name}`.
///
/// Patterns are literal segments and `{parameter}` segments. Literal segments win over
/// parameters at the same position, so `/articles/stream` beats `/articles/{id}`. A path that
/// matches a pattern under another method gives ``Match/methodNotAllowed(allowed:)`` (for `405`
/// with an `Allow` header) rather than not-found.
///
/// **Ownership:** built once at start-up, then read by every event loop.
///
/// **Thread safety:** immutable after building; safe to read from any thread.
public struct Router<Handler: Sendable>: Sendable {
    /// One registered route.
    public struct Route: Sendable {
        /// The pattern as written, used as the `route` label in metrics.
        public let pattern: String
        public let method: String
        public let handler: Handler
        fileprivate let segments: [Segment]
    }

    fileprivate enum Segment: Sendable, Equatable {
        case literal(Substring)
        case parameter(String)
    }

    /// The outcome of matching one request.
    public enum Match: Sendable {
        /// A route matched; `parameters` holds the `{name}` segments, not percent-decoded.
        case found(Route, parameters: [String: String])
        /// The path matched under other methods only.
        case methodNotAllowed(allowed: [String])
        /// Nothing matched the path.
        case notFound
    }

    private var routes: [Route] = []

    /// Creates an empty router.
    public init() {}

    /// Registers `handler` for `method` (e.g. `GET`) and `pattern` (e.g. `/users/{id}/profile`).
    public mutating func add(_ method: String, _ pattern: String, _ handler: Handler) {
        let segments = pattern.split(separator: "/").map { piece -> Segment in
            if piece.hasPrefix("{") && piece.hasSuffix("}") { return .parameter(String(piece.dropFirst().dropLast())) }
            return .literal(piece)
        }
        routes.append(Route(pattern: pattern, method: method, handler: handler, segments: segments))
        // More literal segments first, so that a literal beats a parameter at the same depth.
        routes.sort { lhs, rhs in
            for (left, right) in zip(lhs.segments, rhs.segments) where left != right {
                if case .literal = left, case .parameter = right { return true }
                if case .parameter = left, case .literal = right { return false }
            }
            return false
        }
    }

    /// Finds the route for `method` and `path` (the path without its query).
    public func match(method: String, path: Substring) -> Match {
        let pieces = path.split(separator: "/", omittingEmptySubsequences: true)
        var allowed: [String] = []
        for route in routes {
            guard let parameters = Self.bind(route.segments, to: pieces) else { continue }
            if route.method == method || (method == "HEAD" && route.method == "GET") {
                return .found(route, parameters: parameters)
            }
            if !allowed.contains(route.method) { allowed.append(route.method) }
        }
        if allowed.isEmpty { return .notFound }
        if allowed.contains("GET") && !allowed.contains("HEAD") { allowed.append("HEAD") }
        return .methodNotAllowed(allowed: allowed)
    }

    private static func bind(_ segments: [Segment], to pieces: [Substring]) -> [String: String]? {
        guard segments.count == pieces.count else { return nil }
        var parameters: [String: String] = [:]
        for (segment, piece) in zip(segments, pieces) {
            switch segment {
            case .literal(let literal):
                guard literal == piece else { return nil }
            case .parameter(let name):
                parameters[name] = String(piece)
            }
        }
        return parameters
    }
}
