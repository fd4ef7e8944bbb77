import HTTPServer

/// A channel stream as server-sent events: the `retry:` line, then each event's prebuilt frame
/// (``ChannelEvent/sse``), `: keep-alive` comments while idle, and `event: end` with the reason when the
/// server ends the stream (`shutdown`, `overflow`); a client resumes after either with `Last-Event-ID`.
struct ChannelSSEEncoder: SSEStreamEncoder {
    var retryMilliseconds: Int

    @inline(__always)
    func append(_ event: ChannelEvent, to buffer: inout OutboundBuffer) {
        buffer.append(bytes: event.sse)
    }
}

/// A channel stream as NDJSON: each event's prebuilt line (``ChannelEvent/ndjson``), control lines
/// (`{"reset":…}`, `{"gap":…}`), and `{"end":{"reason":…}}` when the server ends the stream.
struct ChannelNDJSONEncoder: NDJSONStreamEncoder {
    @inline(__always)
    func append(_ event: ChannelEvent, to buffer: inout OutboundBuffer) {
        buffer.append(bytes: event.ndjson)
    }
}
