import HTTPServer

/// One event of a stream of JSON documents: an article, a workflow step, a summary.
///
/// **Thread safety:** value type; not shared.
struct JSONStreamEvent: Sendable, Equatable {
    /// The SSE `id:` field (the position to resume after), if the event has one.
    var id: String?
    /// The SSE `event:` name; `nil` for a plain `message`.
    var event: String?
    /// The event's data: one JSON document, compact.
    var json: [UInt8]

    init(id: String? = nil, event: String? = nil, json: [UInt8]) {
        self.id = id
        self.event = event
        self.json = json
    }
}

/// Server-sent events of JSON documents: `id:`, `event:` and `data:` per event, through
/// ``SSEEncoder`` so that nothing inside the data can start a field or a frame.
///
/// **Thread safety:** value type; used on one loop at a time.
struct SSEJSONEncoder: SSEStreamEncoder {
    /// The reconnection delay sent in the `retry:` field, in milliseconds.
    var retryMilliseconds: Int
    /// Whether a stream that completes ends with `event: end`; `false` where the last event of the
    /// stream already says it is the last (a workflow's `summary`). Shutdown always gets its frame.
    var writesCompletionFrame: Bool

    init(retryMilliseconds: Int, writesCompletionFrame: Bool = true) {
        self.retryMilliseconds = retryMilliseconds
        self.writesCompletionFrame = writesCompletionFrame
    }

    func append(_ event: JSONStreamEvent, to buffer: inout OutboundBuffer) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(event.json.count + 32)
        let data = String(decoding: event.json, as: UTF8.self)
        SSEEncoder.appendEvent(id: event.id, event: event.event, data: data, to: &bytes)
        buffer.append(bytes: bytes)
    }

    func appendEnd(_ reason: StreamEnd, to buffer: inout OutboundBuffer) {
        if reason == .completed && !writesCompletionFrame { return }
        buffer.append(bytes: SSETermEncoder.endFrame(reason))
    }

}

/// Newline-delimited JSON documents: a plain event is its document on one line; a named one is
/// `{"event":"step","data":{…}}`. The last line says how the stream ended, as ``NDJSONTermEncoder``'s
/// does: `{"end":{"reason":"completed"}}` (or `"shutdown"`), or a `{"error":{…problem…}}` line instead.
///
/// **Thread safety:** value type; used on one loop at a time.
struct NDJSONEventEncoder: NDJSONStreamEncoder {
    init() {}

    func append(_ event: JSONStreamEvent, to buffer: inout OutboundBuffer) {
        if let name = event.event {
            var object = JSONObjectWriter()
            object.add("event", name)
            object.addRaw("data", json: event.json)
            var bytes = object.finish()
            bytes.append(0x0A)
            buffer.append(bytes: bytes)
        } else {
            buffer.append(bytes: event.json)
            buffer.append(literal: "\n")
        }
    }

}
