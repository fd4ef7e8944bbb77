/// The status and header fields of a response, as the handler gives them.
///
/// The server adds what it owns when it serialises the head: `Date`, the framing (`Content-Length` or
/// `Transfer-Encoding: chunked`) and `Connection`. Fields of those names in ``headers`` are dropped, so
/// a handler cannot frame a body the server would then frame differently. CR, LF and NUL in names and
/// values are replaced by spaces: a header can never split the response.
///
/// **Ownership:** A value; copied into the connection's outbound buffer and not retained.
///
/// **Thread safety:** Value type; not shared.
public struct ResponseHead: Sendable {
    /// The status line's code and reason phrase.
    public var status: Status
    /// The handler's header fields, in order.
    public var headers: Headers

    /// Creates a head.
    public init(status: Status = .ok, headers: Headers = [:]) {
        self.status = status
        self.headers = headers
    }
}

extension ResponseHead {
    /// Serialises the status line and fields, ending with the blank line.
    static func write(
        status: Status,
        headers: Headers,
        framing: BodyFraming,
        connection: ConnectionHeader,
        into buffer: inout OutboundBuffer,
        loop: EventLoop
    ) {
        writeStatusLine(status, into: &buffer)
        for field in headers where !isServerOwned(field.name) {
            appendSanitized(field.name, into: &buffer)
            buffer.append(": " as StaticString)
            appendSanitized(field.value, into: &buffer)
            buffer.append("\r\n" as StaticString)
        }
        switch framing {
        case .contentLength(let length):
            buffer.append("Content-Length: " as StaticString)
            buffer.appendDecimal(length)
            buffer.append("\r\n" as StaticString)
        case .chunked:
            buffer.append("Transfer-Encoding: chunked\r\n" as StaticString)
        case .untilClose, .none:
            break
        }
        switch connection {
        case .omitted:
            break
        case .keepAlive:
            buffer.append("Connection: keep-alive\r\n" as StaticString)
        case .close:
            buffer.append("Connection: close\r\n" as StaticString)
        }
        loop.appendDateLine(to: &buffer)
        buffer.append("\r\n" as StaticString)
    }

    /// `HTTP/1.1 <code> <reason>\r\n`.
    static func writeStatusLine(_ status: Status, into buffer: inout OutboundBuffer) {
        buffer.append("HTTP/1.1 " as StaticString)
        let code = (100...999).contains(status.code) ? status.code : 500
        buffer.append(UInt8(truncatingIfNeeded: code / 100) &+ 0x30)
        buffer.append(UInt8(truncatingIfNeeded: code / 10 % 10) &+ 0x30)
        buffer.append(UInt8(truncatingIfNeeded: code % 10) &+ 0x30)
        buffer.append(UInt8(ascii: " "))
        appendSanitized(status.reasonPhrase, into: &buffer)
        buffer.append("\r\n" as StaticString)
    }

    /// Whether the server writes this field itself (case-insensitive).
    private static func isServerOwned(_ name: String) -> Bool {
        var name = name
        return name.withUTF8 { bytes in
            switch bytes.count {
            case 4: return ASCIILower.equals(bytes, "date")
            case 10: return ASCIILower.equals(bytes, "connection")
            case 14: return ASCIILower.equals(bytes, "content-length")
            case 17: return ASCIILower.equals(bytes, "transfer-encoding")
            default: return false
            }
        }
    }

    /// Appends `text`, replacing CR, LF and NUL with spaces.
    private static func appendSanitized(_ text: String, into buffer: inout OutboundBuffer) {
        var text = text
        text.withUTF8 { bytes in
            _ = buffer.withUnsafeWritableBytes(minimumCapacity: bytes.count) { space in
                for index in 0..<bytes.count {
                    let byte = bytes[index]
                    space[index] = (byte == 0x0D || byte == 0x0A || byte == 0x00) ? 0x20 : byte
                }
                return bytes.count
            }
        }
    }
}
