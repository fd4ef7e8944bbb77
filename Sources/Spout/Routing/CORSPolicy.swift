import HTTPServer

/// Which origins may read Spout's responses from a browser, and the headers that say so.
///
/// With `*` allowed, every response carries `Access-Control-Allow-Origin: *`. With a list, a
/// request whose `Origin` is on it gets that origin echoed back; others get no CORS headers, so the
/// browser refuses to hand the response to the page. Either way the answer then depends on `Origin`,
/// so with a list every response says `Vary: Origin` (``variesByOrigin``; the response helpers write
/// one `Vary` field for all the headers a response depends on).
///
/// With ``allowsCredentials`` (on when `channels.jwt.cookieName` is set, so that `EventSource` with
/// `withCredentials` can send its token cookie cross-origin), a listed origin also gets
/// `Access-Control-Allow-Credentials: true`. Never with `*`: browsers refuse credentials with a wildcard, and echoing
/// any origin instead would let every site read what a visitor's cookie may.
///
/// **Thread safety:** immutable; shared freely.
struct CORSPolicy: Sendable {
    let allowsAny: Bool
    let allowed: Set<String>
    let allowsCredentials: Bool

    init(allowedOrigins: [String], allowsCredentials: Bool = false) {
        allowsAny = allowedOrigins.contains("*")
        allowed = Set(allowedOrigins)
        self.allowsCredentials = allowsCredentials
    }

    /// The value of `Access-Control-Allow-Origin` for a request from `origin`, if any.
    func allowOrigin(for origin: String?) -> String? {
        if allowsAny { return "*" }
        guard let origin, allowed.contains(origin) else { return nil }
        return origin
    }

    /// Whether the CORS headers of a response depend on the request's `Origin` (a list, not `*`).
    var variesByOrigin: Bool { !allowsAny }

    /// Adds the CORS headers for a response to a request from `origin` (not `Vary`, see ``variesByOrigin``).
    func apply(to headers: inout Headers, origin: String?) {
        guard let value = allowOrigin(for: origin) else { return }
        headers.add(name: "Access-Control-Allow-Origin", value: value)
        if allowsCredentials, value != "*" { headers.add(name: "Access-Control-Allow-Credentials", value: "true") }
    }

    /// Headers answering a preflight (`OPTIONS` with `Access-Control-Request-Method`). The allowed headers
    /// echo `Access-Control-Request-Headers`, so the answer varies with it, and with `Origin` for a list.
    func preflightHeaders(origin: String?, requestedHeaders: String?, methods: String = "GET, HEAD, OPTIONS") -> Headers
    {
        var headers: Headers = [
            "Access-Control-Allow-Methods": methods,
            "Access-Control-Max-Age": "600",
        ]
        // Echo what was asked for (e.g. Last-Event-ID, Accept); values are tokens, so cap the length.
        let allowHeaders = requestedHeaders.map { String($0.prefix(512)) } ?? "Accept, Last-Event-ID"
        headers.add(name: "Access-Control-Allow-Headers", value: allowHeaders)
        apply(to: &headers, origin: origin)
        headers.add(
            name: "Vary",
            value: variesByOrigin ? "Origin, Access-Control-Request-Headers" : "Access-Control-Request-Headers"
        )
        return headers
    }
}
