import HTTPServer

/// A ``StreamEncoder`` of server-sent events (``SSETermEncoder``, ``SSEJSONEncoder``, the channel encoders):
/// the frames around the elements are the same for all of them, so they come from here, and each encoder
/// writes only its elements (and its end, where it differs).
///
/// **Thread safety:** value types; used on one loop at a time.
protocol SSEStreamEncoder: StreamEncoder {
    /// The reconnection delay sent in the `retry:` field, in milliseconds.
    var retryMilliseconds: Int { get }
}

extension SSEStreamEncoder {
    /// The `retry:` field, which joins the first frame's block.
    func appendPrologue(to buffer: inout OutboundBuffer) {
        var bytes: [UInt8] = []
        SSEEncoder.appendRetry(milliseconds: retryMilliseconds, to: &bytes)
        buffer.append(bytes: bytes)
    }

    /// `event: end` with the reason.
    func appendEnd(_ reason: StreamEnd, to buffer: inout OutboundBuffer) {
        buffer.append(bytes: SSETermEncoder.endFrame(reason))
    }

    /// `event: error` with the problem.
    func appendFailure(_ problem: Problem, to buffer: inout OutboundBuffer) {
        buffer.append(bytes: SSETermEncoder.failureFrame(problem))
    }

    /// A `: keep-alive` comment line.
    func appendHeartbeat(to buffer: inout OutboundBuffer) {
        buffer.append(bytes: SSETermEncoder.heartbeat)
    }
}

/// A ``StreamEncoder`` of newline-delimited JSON (``NDJSONTermEncoder``, ``NDJSONEventEncoder``, the channel
/// encoders): nothing
/// before the first line, `{"end":{"reason":…}}` or `{"error":{…problem…}}` as the last one, the same for all
/// of them, so each encoder writes only its elements.
///
/// **Thread safety:** value types; used on one loop at a time.
protocol NDJSONStreamEncoder: StreamEncoder {}

extension NDJSONStreamEncoder {
    /// Nothing: an NDJSON body starts with its first document.
    func appendPrologue(to buffer: inout OutboundBuffer) {}

    /// `{"end":{"reason":…}}` and a newline.
    func appendEnd(_ reason: StreamEnd, to buffer: inout OutboundBuffer) {
        buffer.append(bytes: NDJSONTermEncoder.endLine(reason))
    }

    /// `{"error":{…problem…}}` and a newline.
    func appendFailure(_ problem: Problem, to buffer: inout OutboundBuffer) {
        buffer.append(bytes: NDJSONTermEncoder.failureLine(problem))
    }

    /// Nothing: NDJSON has no comment syntax and blank lines trip strict parsers, so no heartbeat is sent.
    func appendHeartbeat(to buffer: inout OutboundBuffer) {}
}
