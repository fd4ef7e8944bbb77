import HTTPServer

/// A multi-channel stream (`GET /subscribe`) as server-sent events:
///
///     id: <cursor>
///     event: <type>                      (only when the publisher gave one)
///     data: {"channel":"a","id":"mitq0a1c-1","data":<the event's data>}
///
/// control frames without an `id:` (`event: reset` / `event: gap` with the channel first in their data), `: keep-alive`
/// comments while idle, and `event: end` with the reason when the server ends the stream.
struct ChannelMultiSSEEncoder: SSEStreamEncoder {
    var retryMilliseconds: Int

    func append(_ item: ChannelStreamItem, to buffer: inout OutboundBuffer) {
        switch item {
        case .event(let event, let channel, let cursor):
            buffer.append("id: ")
            buffer.append(contentsOf: cursor)
            if let type = event.eventType {
                buffer.append("\nevent: ")
                buffer.append(type)
            }
            buffer.append("\ndata: {\"channel\":")
            buffer.append(contentsOf: channel.json)
            buffer.append(",\"id\":\"")
            buffer.append(event.id)
            buffer.append("\",\"data\":")
            buffer.append(contentsOf: event.payload)
            buffer.append("}\n\n")
        case .control(let event, let channel):
            buffer.append("event: ")
            buffer.append(event.eventType ?? "")
            buffer.append("\ndata: ")
            ChannelMultiEncoding.appendControlObject(event, channel: channel, to: &buffer)
            buffer.append("\n\n")
        }
    }
}

/// A multi-channel stream as NDJSON: `{"channel":"a","id":"…","cursor":"…","event":"note","data":…}` per event,
/// `{"reset":{"channel":"a",…}}` and `{"gap":{"channel":"a",…}}` control lines, and `{"end":{"reason":…}}`.
struct ChannelMultiNDJSONEncoder: NDJSONStreamEncoder {
    func append(_ item: ChannelStreamItem, to buffer: inout OutboundBuffer) {
        switch item {
        case .event(let event, let channel, let cursor):
            buffer.append("{\"channel\":")
            buffer.append(contentsOf: channel.json)
            buffer.append(",\"id\":\"")
            buffer.append(event.id)
            buffer.append("\",\"cursor\":\"")
            buffer.append(contentsOf: cursor)
            buffer.append("\"")
            // The event's own line is `{"id":"<id>"` then `,"event":"<type>"` when typed, then `,"data":`.
            let typeStart = 8 &+ event.id.utf8.count
            let typeEnd = event.payloadStart &- 8
            if typeEnd > typeStart { buffer.append(contentsOf: event.ndjson[typeStart..<typeEnd]) }
            buffer.append(",\"data\":")
            buffer.append(contentsOf: event.payload)
            buffer.append("}\n")
        case .control(let event, let channel):
            buffer.append("{\"")
            buffer.append(event.eventType ?? "")
            buffer.append("\":")
            ChannelMultiEncoding.appendControlObject(event, channel: channel, to: &buffer)
            buffer.append("}\n")
        }
    }
}

/// What both encoders share.
enum ChannelMultiEncoding {
    /// A control frame's object with the channel first: `{"channel":"a","reason":…}`.
    static func appendControlObject(_ event: ChannelEvent, channel: ChannelTag, to buffer: inout OutboundBuffer) {
        // A presence frame names its channel already.
        if event.live == .presence {
            buffer.append(contentsOf: event.payload)
            return
        }
        buffer.append("{\"channel\":")
        buffer.append(contentsOf: channel.json)
        let object = event.payload
        // `{` then the members, if any.
        if object.count > 2 {
            buffer.append(UInt8(ascii: ","))
            buffer.append(contentsOf: object.dropFirst())
        } else {
            buffer.append(UInt8(ascii: "}"))
        }
    }
}
