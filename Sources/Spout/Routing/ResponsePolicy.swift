import HTTPServer

/// How the responses of one route are labelled for caches and content negotiation; chosen when the route
/// is registered (``Routes/makeRouter()``), applied by the response helpers of ``RequestContext``.
///
/// **Thread safety:** value type; not shared.
enum ResponsePolicy: Int, CaseIterable, Sendable {
    /// No negotiation, no `Cache-Control` of its own: listings and documents (a route may still give a
    /// validator and its own `Cache-Control`, as `/openapi.json` and the problem pages do).
    case plain
    /// Answers that change from one request to the next: `Cache-Control: no-store` on every status
    /// (`/health`, `/ready`, `/metrics`); never coded.
    case noStore
    /// The representation follows `Accept` (a format, or `406`): `Vary: Accept`.
    case negotiated
    /// JSON built from the upstream API: `Vary: Accept`, and on success `Cache-Control: max-age=` the
    /// upstream cache's TTL (`upstream.cacheTTLSeconds`; `no-cache` when it is 0), since Spout itself serves
    /// the same data for that long.
    case upstreamJSON
    /// The demo upstream: no `gzip` (its client is Spout itself, over loopback), nothing else.
    case demo

    var negotiatesFormat: Bool { self == .negotiated || self == .upstreamJSON }

    /// Whether JSON bodies of the route may be coded: not the demo upstream's, nor the service routes' (a few
    /// bytes of JSON, or text for a scraper).
    var mayCompress: Bool { self != .demo && self != .noStore }
}

/// The header fields a route's responses carry besides their own, resolved once at start-up from its
/// ``ResponsePolicy`` and the configuration, so a response copies them instead of building them.
///
/// **Ownership:** built by ``ServiceContext``, one per policy, shared by every request.
///
/// **Thread safety:** immutable; shared freely.
final class RouteResponses: Sendable {
    let policy: ResponsePolicy
    /// Whether complete JSON bodies of this route may be `gzip`-coded.
    let compresses: Bool
    /// `Vary` of complete responses whose content type can be coded (JSON, problems).
    let varyCompressible: String?
    /// `Vary` of every other response (streams, text, HTML).
    let varyOther: String?
    /// `Cache-Control` of `2xx` answers, and of the others.
    let cacheControlSuccess: String?
    let cacheControlOther: String?
    /// `application/json` answers with every header above and `Access-Control-Allow-Origin: *`, when every
    /// origin is allowed (then CORS does not depend on the request): `2xx` and other statuses.
    let jsonSuccess: Headers?
    let jsonOther: Headers?
    /// ``jsonSuccess`` with ``Validator/immutable`` for `Cache-Control` (a JSON sequence).
    let jsonImmutable: Headers?

    init(policy: ResponsePolicy, configuration: SpoutConfiguration, cors: CORSPolicy) {
        self.policy = policy
        compresses = policy.mayCompress && configuration.compression.enabled && Gzip.shared != nil
        var vary: [String] = []
        if policy.negotiatesFormat { vary.append("Accept") }
        let varyWithoutCoding = vary + (cors.variesByOrigin ? ["Origin"] : [])
        if compresses { vary.append("Accept-Encoding") }
        if cors.variesByOrigin { vary.append("Origin") }
        let varyCompressible = vary.isEmpty ? nil : vary.joined(separator: ", ")
        self.varyCompressible = varyCompressible
        varyOther = varyWithoutCoding.isEmpty ? nil : varyWithoutCoding.joined(separator: ", ")
        switch policy {
        case .noStore:
            cacheControlSuccess = "no-store"
            cacheControlOther = "no-store"
        case .upstreamJSON:
            let seconds = Int(configuration.upstream.cacheTTLSeconds.rounded(.down))
            cacheControlSuccess = seconds > 0 ? "max-age=\(seconds)" : "no-cache"
            cacheControlOther = nil
        case .plain, .negotiated, .demo:
            cacheControlSuccess = nil
            cacheControlOther = nil
        }
        if cors.allowsAny {
            func json(_ cacheControl: String?) -> Headers {
                var headers: Headers = ["Content-Type": "application/json"]
                cors.apply(to: &headers, origin: nil)
                if let varyCompressible { headers.add(name: "Vary", value: varyCompressible) }
                if let cacheControl { headers.add(name: "Cache-Control", value: cacheControl) }
                return headers
            }
            jsonSuccess = json(cacheControlSuccess)
            jsonOther = json(cacheControlOther)
            jsonImmutable = cacheControlSuccess == nil ? json(Validator.immutable) : nil
        } else {
            jsonSuccess = nil
            jsonOther = nil
            jsonImmutable = nil
        }
    }

    /// Adds `Vary` and `Cache-Control` for a response of `status` (CORS is added by the caller).
    func label(_ headers: inout Headers, status: Status, compressible: Bool) {
        if let vary = compressible ? varyCompressible : varyOther { headers.add(name: "Vary", value: vary) }
        if let cacheControl = (200..<300).contains(status.code) ? cacheControlSuccess : cacheControlOther {
            headers.add(name: "Cache-Control", value: cacheControl)
        }
    }

    /// The prebuilt JSON head for `status`, with `cacheControl` when a validator gives one, if every origin is
    /// allowed and that head is prebuilt (the immutable one is).
    func jsonHeaders(status: Status, cacheControl: String? = nil) -> Headers? {
        guard let cacheControl else { return (200..<300).contains(status.code) ? jsonSuccess : jsonOther }
        return cacheControl == Validator.immutable && (200..<300).contains(status.code) ? jsonImmutable : nil
    }
}

/// A validator and freshness for a complete response: a strong `ETag` and the `Cache-Control` that goes with
/// it. A `GET` or `HEAD` whose `If-None-Match` matches gets `304` (``RequestContext/respondNotModified(_:contentType:)``).
///
/// **Thread safety:** value type; not shared.
struct Validator: Sendable {
    /// The tag of the uncoded body; a `gzip` body's tag is derived from it.
    let tag: EntityTag
    let cacheControl: String

    /// A sequence of fixed `start` and `count` never changes: a year, and no revalidation on reload. Without
    /// `public`: a response to a request without credentials may be stored by shared caches anyway (RFC 9111
    /// §3), and REDbot warns that it is unnecessary.
    static let immutable = "max-age=31536000, immutable"
}
