import HTTPServer

/// A channel stream as server-sent events: the `retry:` line, then each event's prebuilt frame
/// (``ChannelEvent/sse``), `: keep-alive` comments while idle, and `event: end` with the reason when the
/// server ends the stream (`shutdown`, `overflow`); a client resumes after either with `Last-Event-ID`.
struct ChannelSSEEncoder: StreamEncoder {
    var retryMilliseconds: Int

    func appendPrologue(to buffer: inout OutboundBuffer) {
        SSETermEncoder(retryMilliseconds: retryMilliseconds).appendPrologue(to: &buffer)
    }

    @inline(__always)
    func append(_ event: ChannelEvent, to buffer: inout OutboundBuffer) {
        buffer.append(bytes: event.sse)
    }

    func appendEnd(_ reason: StreamEnd, to buffer: inout OutboundBuffer) {
        buffer.append(bytes: SSETermEncoder.endFrame(reason))
    }

    func appendFailure(_ problem: Problem, to buffer: inout OutboundBuffer) {
        buffer.append(bytes: SSETermEncoder.failureFrame(problem))
    }

    func appendHeartbeat(to buffer: inout OutboundBuffer) {
        buffer.append(bytes: SSETermEncoder.heartbeat)
    }
}

/// A channel stream as NDJSON: each event's prebuilt line (``ChannelEvent/ndjson``), control lines
/// (`{"reset":…}`, `{"gap":…}`), and `{"end":{"reason":…}}` when the server ends the stream.
struct ChannelNDJSONEncoder: StreamEncoder {
    func appendPrologue(to buffer: inout OutboundBuffer) {}

    @inline(__always)
    func append(_ event: ChannelEvent, to buffer: inout OutboundBuffer) {
        buffer.append(bytes: event.ndjson)
    }

    func appendEnd(_ reason: StreamEnd, to buffer: inout OutboundBuffer) {
        buffer.append(bytes: NDJSONTermEncoder.endLine(reason))
    }

    func appendFailure(_ problem: Problem, to buffer: inout OutboundBuffer) {
        buffer.append(bytes: NDJSONTermEncoder.failureLine(problem))
    }

    func appendHeartbeat(to buffer: inout OutboundBuffer) {}
}
