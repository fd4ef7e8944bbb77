import EventLoops
import HTTPServer

// Streamed responses: their head, and the record of their end.
extension RequestContext {
    /// Starts a `200` SSE or NDJSON response of `mediaType`, with `Cache-Control: no-cache` and
    /// `X-Accel-Buffering: no` (so that proxies pass each event on at once). A `HEAD` request gets the
    /// head alone and is recorded as a completed stream: then `nil` comes back, as there is nothing
    /// to produce. Otherwise the caller reports the end with ``streamEnded(_:)``.
    ///
    /// Streams are never `gzip`-coded: a compressor holds bytes back until it has enough to code, which
    /// would delay each event, and the client's read rate is the producer's demand only while every byte
    /// written is a byte the client can read.
    func startEventStream(mediaType: String) -> BodyWriter? {
        let writer = startStream(headers: [
            "Content-Type": mediaType,
            "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no",
        ])
        guard request.method != .head else {
            writer.finish()
            streamEnded(StreamSummary(events: 0, bytes: 0, end: .completed))
            return nil
        }
        return writer
    }

    /// Starts a `200` streamed response; the caller reports its end with ``streamEnded(_:)``.
    func startStream(headers: Headers) -> BodyWriter {
        var headers = headers
        services.cors.apply(to: &headers, origin: request.headers["Origin"])
        responses.label(&headers, status: .ok, compressible: false)
        finishHead(&headers)
        services.metrics.activeStreams.add(1)
        return responder.startStreaming(status: .ok, headers: headers)
    }

    /// Records a streamed response that ended.
    func streamEnded(_ summary: StreamSummary) {
        services.metrics.activeStreams.add(-1)
        services.metrics.eventsSent.increment(by: summary.events)
        services.metrics.streamsEnded.increment([summary.end.rawValue])
        record(status: 200, bytes: summary.bytes, events: summary.events, end: summary.end)
    }
}
