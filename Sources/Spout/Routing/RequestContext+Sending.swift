import Dispatch
import EventLoops
import HTTPServer

// The way out: `gzip`, the `ETag` of what this client gets, and the head handed to the server.
extension RequestContext {
    /// Bodies larger than this are `gzip`-coded on a worker, not on the loop (zlib codes decimal digits at
    /// roughly 20–60 MB/s, so 16 KiB is a few hundred microseconds at most).
    static let inlineCompressionLimit = 16 * 1024

    /// Where coding of large bodies runs; concurrent, bounded by Dispatch's worker pool.
    private static let compressionQueue = DispatchQueue(
        label: "spout.compression",
        qos: .utility,
        attributes: .concurrent
    )

    /// Sends a complete response whose head (content type, CORS, `Vary`, `Cache-Control`) is ready: adds the
    /// `ETag` of `tag` (the uncoded body's), and codes the body with `gzip` when it is
    /// `compressible`, at least `compression.minimumBytes` long (or the client refuses an uncoded body) and
    /// the client's `Accept-Encoding` prefers `gzip`. A coded body gets `Content-Encoding: gzip` and the
    /// coded tag (a different strong `ETag`, RFC 9110 §8.8.3).
    func send(
        status: Status,
        headers: consuming Headers,
        body: [UInt8],
        compressible: Bool,
        tag: EntityTag?,
        upstreamFailure: UpstreamFailureSummary? = nil
    ) {
        guard compressible, status.allowsBody, !body.isEmpty, let gzip = Gzip.shared,
            let acceptEncoding = request.headers["Accept-Encoding"]
        else {
            write(status: status, headers: headers, body: body, tag: tag, upstreamFailure: upstreamFailure)
            return
        }
        let accepted = AcceptEncoding(acceptEncoding)
        guard accepted.prefersGzip,
            body.count >= services.compressionMinimumBytes || accepted.refusesIdentity
        else {
            write(status: status, headers: headers, body: body, tag: tag, upstreamFailure: upstreamFailure)
            return
        }
        guard body.count > Self.inlineCompressionLimit else {
            writeCoded(
                gzip.compress(body),
                gzip,
                status: status,
                headers: headers,
                body: body,
                tag: tag,
                upstreamFailure: upstreamFailure
            )
            return
        }
        let loop = loop
        let head = headers
        Self.compressionQueue.async {
            let coded = gzip.compress(body)
            loop.execute {
                writeCoded(
                    coded,
                    gzip,
                    status: status,
                    headers: head,
                    body: body,
                    tag: tag,
                    upstreamFailure: upstreamFailure
                )
            }
        }
    }

    /// Writes the coded body with its tag, or the uncoded one when zlib failed.
    private func writeCoded(
        _ coded: [UInt8]?,
        _ gzip: Gzip,
        status: Status,
        headers: consuming Headers,
        body: [UInt8],
        tag: EntityTag?,
        upstreamFailure: UpstreamFailureSummary?
    ) {
        guard let coded else {
            write(status: status, headers: headers, body: body, tag: tag, upstreamFailure: upstreamFailure)
            return
        }
        headers.add(name: "Content-Encoding", value: "gzip")
        write(
            status: status,
            headers: headers,
            body: coded,
            tag: tag?.withCoding(gzip.coding),
            upstreamFailure: upstreamFailure
        )
    }

    /// Writes a complete response and records it (log line, metrics).
    func write(
        status: Status,
        headers: consuming Headers,
        body: [UInt8],
        tag: EntityTag?,
        upstreamFailure: UpstreamFailureSummary? = nil
    ) {
        emit(status: status, headers: headers, tag: tag, body: body)
        record(
            status: status.code,
            bytes: request.method == .head ? 0 : body.count,
            upstreamFailure: upstreamFailure
        )
    }

    /// Hands a complete response to the server: `headers`, then the `ETag` of `tag` and `X-Request-ID` (the
    /// fields ``finishHead(_:)`` adds), which the server writes after them; so headers built once for the route
    /// are written as they are, not copied to add the two.
    func emit(status: Status, headers: Headers, tag: EntityTag? = nil, body: [UInt8]) {
        let requestID: (name: StaticString, value: String) = ("X-Request-ID", correlation.requestID)
        let extra =
            if let tag { ExtraFields(("ETag", tag.headerValue), requestID) } else { ExtraFields(requestID) }
        responder.respond(status: status, headers: headers, appending: extra, body: body)
    }

    /// The last step of every streamed response head (complete ones get the same field from ``emit(status:headers:tag:body:)``):
    /// the one place to add a header that all of Spout's responses carry: `X-Request-ID`. The route's own
    /// headers, CORS, `Vary`, `Cache-Control`, `Content-Encoding` and `ETag` are in `headers` already; the
    /// server adds `Date`, the framing and `Connection`. Keep it cheap: it runs for every request.
    @inline(__always)
    func finishHead(_ headers: inout Headers) {
        headers.add(name: "X-Request-ID", value: correlation.requestID)
    }

    /// Whether a body of `contentType` is one Spout codes: JSON and problem documents.
    static func isCompressible(contentType: String?) -> Bool {
        guard let contentType else { return false }
        return contentType.hasPrefix("application/json") || contentType.hasPrefix(Problem.mediaType)
    }
}
