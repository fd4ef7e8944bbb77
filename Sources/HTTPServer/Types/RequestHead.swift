/// The parsed start line and header section of one HTTP/1.x request.
///
/// **Ownership:** A value; produced by ``RequestParser`` and owned by whoever handles the request.
/// **Thread safety:** Value type; not shared.
public struct RequestHead: Sendable, Equatable {
    /// The request method, case-sensitive.
    public var method: Method
    /// The request-target exactly as it appeared on the request line.
    public var target: String
    /// The path part of the target, not percent-decoded: the origin-form path, the path of an absolute-form target
    /// (`/` when it has none), `*` for the asterisk form, and the whole target for the authority form.
    public var path: String
    /// The raw query after the first `?`, without the `?`, not decoded; nil when the target has no `?`.
    public var query: String?
    /// The protocol version from the request line.
    public var version: Version
    /// The header fields in the order received.
    public var headers: Headers
    /// Whether the connection may carry another request after this one: HTTP/1.1 unless `Connection: close`,
    /// HTTP/1.0 only with `Connection: keep-alive`.
    public var keepAlive: Bool
    /// Whether the client sent `Expect: 100-continue` on an HTTP/1.1 request and waits for `100 Continue`.
    public var expectsContinue: Bool

    /// Creates a head, deriving ``path``, ``query``, ``keepAlive`` and ``expectsContinue`` from the other values.
    public init(method: Method, target: String, version: Version = .http1_1, headers: Headers = [:]) {
        var target = target
        let parts = target.withUTF8 { bytes in
            let split = RequestTarget(splitting: bytes)
            let path =
                split.path.isEmpty
                ? "/" : String(decoding: UnsafeBufferPointer(rebasing: bytes[split.path]), as: UTF8.self)
            let query = split.query.map { String(decoding: UnsafeBufferPointer(rebasing: bytes[$0]), as: UTF8.self) }
            return (path, query)
        }
        var close = false
        var keepAliveToken = false
        for value in headers.values(for: "connection") {
            for token in value.split(separator: ",") {
                let trimmed = token.trimmingOWS()
                if ASCII.caseInsensitiveEquals(trimmed, "close") { close = true }
                if ASCII.caseInsensitiveEquals(trimmed, "keep-alive") { keepAliveToken = true }
            }
        }
        let atLeast1_1 = version >= .http1_1
        let expects =
            atLeast1_1
            && headers.values(for: "expect").contains { value in
                value.split(separator: ",").contains {
                    ASCII.caseInsensitiveEquals($0.trimmingOWS(), "100-continue")
                }
            }
        self.init(
            method: method,
            target: target,
            path: parts.0,
            query: parts.1,
            version: version,
            headers: headers,
            keepAlive: !close && (atLeast1_1 || keepAliveToken),
            expectsContinue: expects
        )
    }

    /// Memberwise initializer used by the parser, which has already computed every field.
    init(
        method: Method,
        target: String,
        path: String,
        query: String?,
        version: Version,
        headers: Headers,
        keepAlive: Bool,
        expectsContinue: Bool
    ) {
        self.method = method
        self.target = target
        self.path = path
        self.query = query
        self.version = version
        self.headers = headers
        self.keepAlive = keepAlive
        self.expectsContinue = expectsContinue
    }

    /// The query's `name=value` pairs, split on `&`, with `+` read as a space and `%XX` escapes decoded.
    ///
    /// Empty pairs are skipped, a pair without `=` has an empty value, a malformed escape (`%zz`, a trailing `%`)
    /// is kept literally, and bytes that are not UTF-8 after decoding become U+FFFD. Never traps.
    public var queryItems: [(name: String, value: String)] {
        guard let query else { return [] }
        return QueryDecoder.items(in: query)
    }
}

extension StringProtocol {
    /// The string without leading and trailing SP and HTAB.
    fileprivate func trimmingOWS() -> String {
        var start = startIndex
        var end = endIndex
        while start < end, self[start] == " " || self[start] == "\t" {
            start = index(after: start)
        }
        while end > start, self[index(before: end)] == " " || self[index(before: end)] == "\t" {
            end = index(before: end)
        }
        return String(self[start..<end])
    }
}
