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
struct Router<Handler: Sendable>: Sendable {
    /// One registered route.
    ///
    /// A class, though immutable, so that handing a matched route on (in a ``Match``, to the request's
    /// context) costs one reference count rather than one for each of its strings and arrays.
    final class Route: Sendable {
        /// The pattern as written, used as the `route` label in metrics.
        let pattern: String
        let method: String
        let handler: Handler
        /// The position of this route in registration order (0 for the first ``add(_:_:maxBodyBytes:_:)``), so
        /// that per-route data can sit in an array beside the router.
        let index: Int
        /// The largest request body the route takes, in bytes; 0 (the default) for none. The server refuses a
        /// larger body with `413` before reading it.
        let maxBodyBytes: Int
        fileprivate let segments: [Segment]
        /// The UTF-8 bytes of each literal segment (empty for a parameter), for matching paths on bytes.
        fileprivate let literalBytes: [[UInt8]]

        fileprivate init(
            pattern: String,
            method: String,
            handler: Handler,
            index: Int,
            maxBodyBytes: Int,
            segments: [Segment],
            literalBytes: [[UInt8]]
        ) {
            self.pattern = pattern
            self.method = method
            self.handler = handler
            self.index = index
            self.maxBodyBytes = maxBodyBytes
            self.segments = segments
            self.literalBytes = literalBytes
        }
    }

    fileprivate enum Segment: Sendable, Equatable {
        case literal(Substring)
        case parameter(String)
    }

    /// The outcome of matching one request.
    enum Match: Sendable {
        /// A route matched; `parameters` holds the `{name}` segments, not percent-decoded.
        case found(Route, parameters: PathParameters)
        /// The path matched under other methods only.
        case methodNotAllowed(allowed: [String])
        /// Nothing matched the path.
        case notFound
    }

    private var routes: [Route] = []

    /// The patterns in registration order: `patterns[route.index] == route.pattern`.
    private(set) var patterns: [String] = []

    /// Every registered route's method and pattern, in registration order.
    var registered: [(method: String, pattern: String)] {
        routes.sorted { $0.index < $1.index }.map { ($0.method, $0.pattern) }
    }

    /// Creates an empty router.
    init() {}

    /// Registers `handler` for `method` (e.g. `GET`) and `pattern` (e.g. `/users/{id}/profile`), taking request
    /// bodies of up to `maxBodyBytes` (default 0: none; GET, HEAD, OPTIONS and DELETE routes take none).
    mutating func add(_ method: String, _ pattern: String, maxBodyBytes: Int = 0, _ handler: Handler) {
        let segments = pattern.split(separator: "/").map { piece -> Segment in
            if piece.hasPrefix("{") && piece.hasSuffix("}") { return .parameter(String(piece.dropFirst().dropLast())) }
            return .literal(piece)
        }
        let literalBytes = segments.map { segment -> [UInt8] in
            if case .literal(let literal) = segment { return Array(literal.utf8) }
            return []
        }
        routes.append(
            Route(
                pattern: pattern,
                method: method,
                handler: handler,
                index: patterns.count,
                maxBodyBytes: max(0, maxBodyBytes),
                segments: segments,
                literalBytes: literalBytes
            )
        )
        patterns.append(pattern)
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
    func match(method: String, path: Substring) -> Match {
        var path = path
        // ASCII paths (all that the HTTP parser lets through) match on bytes without splitting them into an
        // array; in ASCII a byte is a character, so the outcome is the one of the general way below.
        let fast: Match? = path.withUTF8 { bytes in
            bytes.allSatisfy({ $0 < 0x80 }) ? matchASCII(method: method, path: bytes) : nil
        }
        if let fast { return fast }
        let pieces = path.split(separator: "/", omittingEmptySubsequences: true)
        var allowed: [String] = []
        for route in routes {
            guard let parameters = Self.bind(route.segments, to: pieces) else { continue }
            if route.method == method || (method == "HEAD" && route.method == "GET") {
                return .found(route, parameters: parameters)
            }
            if !allowed.contains(route.method) { allowed.append(route.method) }
        }
        return Self.unmatched(allowed: allowed)
    }

    private static func unmatched(allowed: [String]) -> Match {
        var allowed = allowed
        if allowed.isEmpty { return .notFound }
        if allowed.contains("GET") && !allowed.contains("HEAD") { allowed.append("HEAD") }
        return .methodNotAllowed(allowed: allowed)
    }

    /// ``match(method:path:)`` for an all-ASCII path, on its bytes.
    private func matchASCII(method: String, path: UnsafeBufferPointer<UInt8>) -> Match {
        var pieceCount = 0
        var pieces = PathPieces(path)
        while pieces.next() != nil { pieceCount += 1 }
        var allowed: [String] = []
        // By index: `for route in routes` would copy (retain and release) every route it looks at.
        for index in routes.indices
        where routes[index].segments.count == pieceCount && Self.literalsMatch(routes[index].literalBytes, path) {
            let route = routes[index]
            if route.method == method || (method == "HEAD" && route.method == "GET") {
                return .found(route, parameters: Self.parameters(of: route, in: path))
            }
            if !allowed.contains(route.method) { allowed.append(route.method) }
        }
        return Self.unmatched(allowed: allowed)
    }

    /// Whether every literal segment of `route` equals the path piece at its position (the counts agree).
    private static func literalsMatch(_ literalBytes: [[UInt8]], _ path: UnsafeBufferPointer<UInt8>) -> Bool {
        var pieces = PathPieces(path)
        for literal in literalBytes {
            guard let piece = pieces.next() else { return false }
            // Lengths first: most literals that differ differ in length, and that costs no byte comparison.
            guard
                literal.isEmpty
                    || (literal.count == piece.count
                        && literal.elementsEqual(UnsafeBufferPointer(rebasing: path[piece])))
            else {
                return false
            }
        }
        return true
    }

    /// The `{name}` segments of a matched `route`, read from `path`.
    private static func parameters(of route: Route, in path: UnsafeBufferPointer<UInt8>) -> PathParameters {
        var parameters = PathParameters()
        var pieces = PathPieces(path)
        for segment in route.segments {
            guard let piece = pieces.next() else { break }
            if case .parameter(let name) = segment {
                parameters[name] = String(decoding: UnsafeBufferPointer(rebasing: path[piece]), as: UTF8.self)
            }
        }
        return parameters
    }

    private static func bind(_ segments: [Segment], to pieces: [Substring]) -> PathParameters? {
        guard segments.count == pieces.count else { return nil }
        var parameters = PathParameters()
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

/// The non-empty `/`-separated pieces of a path, as byte ranges, in order.
///
/// **Thread safety:** value type; not shared.
private struct PathPieces {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var position = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    mutating func next() -> Range<Int>? {
        while position < bytes.count && bytes[position] == UInt8(ascii: "/") { position += 1 }
        guard position < bytes.count else { return nil }
        let start = position
        while position < bytes.count && bytes[position] != UInt8(ascii: "/") { position += 1 }
        return start..<position
    }
}
