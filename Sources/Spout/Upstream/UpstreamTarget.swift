import Foundation

/// Where one upstream request went: the absolute URL, and the resource under the API root that a
/// client of Spout may be told about.
///
/// The URL (`http://10.0.0.5:8080/api/posts/1`) is configuration — the upstream's host, port and base
/// path — so it goes to the log only. The resource (`/posts/1`, with its query) is what Spout asked the
/// API for, in the API's own terms, and is all a problem body names.
///
/// **Thread safety:** value type.
struct UpstreamTarget: Hashable, Sendable, CustomStringConvertible {
    /// The absolute URL of the request, e.g. `http://127.0.0.1:8080/demo/posts/1`. For logs only.
    var url: String
    /// The resource under the API root with its query, e.g. `/posts/1` or `/posts?_page=2&_limit=10`.
    var resource: String

    /// Creates a target from the absolute URL and the resource under the API root.
    init(url: String, resource: String) {
        self.url = url
        self.resource = resource
    }

    /// The target of `url`, whose resource is what follows `base` in it (the whole path and query when
    /// `url` is not under `base`).
    init(url: URL, base: URL?) {
        let absolute = url.absoluteString
        self.url = absolute
        let rest = Self.root(base).flatMap { absolute.hasPrefix($0) ? absolute.dropFirst($0.count) : nil }
        if let rest, rest.first == "/" || rest.first == "?" {
            resource = rest.first == "/" ? String(rest) : "/" + rest
        } else {
            let components = URLComponents(url: url, resolvingAgainstBaseURL: false)
            let path = components?.percentEncodedPath ?? ""
            let query = components?.percentEncodedQuery.map { "?" + $0 } ?? ""
            resource = (path.isEmpty ? "/" : path) + query
        }
    }

    /// The client-safe name: the resource.
    var description: String { resource }

    /// `base` as a prefix of the URLs under it, without a trailing slash.
    private static func root(_ base: URL?) -> String? {
        guard let text = base?.absoluteString else { return nil }
        guard !text.isEmpty else { return nil }
        return text.hasSuffix("/") ? String(text.dropLast()) : text
    }
}
