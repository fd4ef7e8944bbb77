/// Writes server-sent event frames (WHATWG HTML §9.2) into a byte buffer.
///
/// Field values never carry a line break of their own: `data` with line breaks becomes several
/// `data:` lines (which `EventSource` joins back with `\n`), and `id`/`event` values have CR, LF
/// and NUL removed, so nothing taken from a request or an upstream can inject a field or a frame.
///
/// Only an event ends its block with the empty line. The `retry:` field and comments are single lines
/// that join the block of the next event: a block without `data` is dispatched by no browser, but some
/// clients (`httpx-sse`) turn one that has a `retry:` field, or any once an `id:` was seen, into an empty
/// message. So no client ever sees an event the stream did not send.
///
/// **Thread safety:** value type; not shared.
enum SSEEncoder {
    /// Appends the `retry:` field line that tells `EventSource` how long to wait before reconnecting. It
    /// ends no block: it belongs to the block of the next event.
    static func appendRetry(milliseconds: Int, to bytes: inout [UInt8]) {
        bytes.append(contentsOf: Array("retry: ".utf8))
        JSONText.appendInteger(max(0, milliseconds), to: &bytes)
        bytes.append(0x0A)
    }

    /// Appends a comment line (`: text`), ignored by clients; keeps idle connections alive. It ends no
    /// block, so it can never complete one into an (empty) event.
    static func appendComment(_ text: String, to bytes: inout [UInt8]) {
        bytes.append(contentsOf: [UInt8(ascii: ":"), UInt8(ascii: " ")])
        appendSingleLine(text, to: &bytes)
        bytes.append(0x0A)
    }

    /// Appends one event: optional `id` and `event` fields and the data split into `data:` lines.
    static func appendEvent(id: String? = nil, event: String? = nil, data: String, to bytes: inout [UInt8]) {
        if let event {
            bytes.append(contentsOf: Array("event: ".utf8))
            appendSingleLine(event, to: &bytes)
            bytes.append(0x0A)
        }
        if let id {
            bytes.append(contentsOf: Array("id: ".utf8))
            appendSingleLine(id, to: &bytes)
            bytes.append(0x0A)
        }
        appendData(data, to: &bytes)
        bytes.append(0x0A)
    }

    /// Appends `data:` lines for `data`, splitting at CRLF, CR and LF as a client would.
    static func appendData(_ data: String, to bytes: inout [UInt8]) {
        let prefix = Array("data: ".utf8)
        bytes.append(contentsOf: prefix)
        var previousWasCR = false
        for byte in data.utf8 {
            switch byte {
            case 0x0D:
                bytes.append(0x0A)
                bytes.append(contentsOf: prefix)
                previousWasCR = true
                continue
            case 0x0A:
                if !previousWasCR {
                    bytes.append(0x0A)
                    bytes.append(contentsOf: prefix)
                }
            default:
                bytes.append(byte)
            }
            previousWasCR = false
        }
        bytes.append(0x0A)
    }

    /// Appends a field value with CR, LF and NUL removed.
    private static func appendSingleLine(_ text: String, to bytes: inout [UInt8]) {
        for byte in text.utf8 where byte != 0x0A && byte != 0x0D && byte != 0x00 {
            bytes.append(byte)
        }
    }
}
