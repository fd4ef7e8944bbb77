import EventLoops
import HTTPServer

// Conditional requests: `If-None-Match` against a validator, answered `304`.
extension RequestContext {
    /// Answers `304 Not Modified` when the request's `If-None-Match` names `validator`'s tag, or that of its
    /// `gzip` body if this client would get that one (RFC 9110 §13.1.2: weak comparison, `*`, lists); then
    /// returns true and the route is done. The `304` carries the `ETag` that matched, `Cache-Control`, `Vary`
    /// and CORS, as the `200` would.
    func respondNotModified(_ validator: Validator, contentType: String = "application/json") -> Bool {
        guard let header = request.headers["If-None-Match"] else { return false }
        let compressible = responses.compresses && Self.isCompressible(contentType: contentType)
        var candidates = [validator.tag]
        if compressible, let gzip = Gzip.shared, AcceptEncoding(request.headers["Accept-Encoding"]).prefersGzip {
            candidates.append(validator.tag.withCoding(gzip.coding))
        }
        guard let matched = IfNoneMatch.match(header, candidates: candidates) else { return false }
        var headers: Headers = [:]
        services.cors.apply(to: &headers, origin: request.headers["Origin"])
        responses.label(&headers, status: .notModified, compressible: compressible)
        headers.add(name: "Cache-Control", value: validator.cacheControl)
        write(status: .notModified, headers: headers, body: [], tag: matched)
        return true
    }
}
