import EventLoops
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

/// Up to two fields written after a response's ``Headers``, so that a handler adding one field per response to
/// headers built once (the request's ID, a tag) does not copy them to add it. The name is written as it is (a
/// literal, so a token); the value like any other (CR, LF and NUL become spaces).
///
/// **Thread safety:** Value type; not shared.
package struct ExtraFields: Sendable {
    package var first: (name: StaticString, value: String)?
    package var second: (name: StaticString, value: String)?

    package init(
        _ first: (name: StaticString, value: String)? = nil,
        _ second: (name: StaticString, value: String)? = nil
    ) {
        self.first = first
        self.second = second
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
        dates: inout DateCache,
        appending extra: ExtraFields = ExtraFields()
    ) {
        writeStatusLine(status, into: &buffer)
        // Straight from the headers' bytes: no string per name and value.
        headers.forEachFieldBytes { name, value in
            guard !isServerOwned(name) else { return }
            appendSanitized(name, into: &buffer)
            buffer.append(": " as StaticString)
            appendSanitized(value, into: &buffer)
            buffer.append("\r\n" as StaticString)
        }
        if let (name, value) = extra.first { appendField(name, value, into: &buffer) }
        if let (name, value) = extra.second { appendField(name, value, into: &buffer) }
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
        dates.appendLine(to: &buffer, now: SystemEnvironment.wallClockSeconds())
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

    /// `name: value\r\n`, the value sanitised.
    private static func appendField(_ name: StaticString, _ value: String, into buffer: inout OutboundBuffer) {
        buffer.append(name)
        buffer.append(": " as StaticString)
        appendSanitized(value, into: &buffer)
        buffer.append("\r\n" as StaticString)
    }

    /// Whether the server writes this field itself (case-insensitive).
    private static func isServerOwned(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        switch bytes.count {
        case 4: ASCIILower.equals(bytes, "date")
        case 10: ASCIILower.equals(bytes, "connection")
        case 14: ASCIILower.equals(bytes, "content-length")
        case 17: ASCIILower.equals(bytes, "transfer-encoding")
        default: false
        }
    }

    /// Appends the field bytes `bytes`, replacing CR, LF and NUL with spaces. Bytes that are not valid UTF-8
    /// are written as U+FFFD, as when the field is read as a string.
    private static func appendSanitized(_ bytes: UnsafeBufferPointer<UInt8>, into buffer: inout OutboundBuffer) {
        // Nearly always there is nothing to replace: one pass to check, then one block copy (a route's prebuilt
        // headers are a few hundred bytes on every response).
        if bytes.allSatisfy({ $0 < 0x80 && $0 != 0x0D && $0 != 0x0A && $0 != 0x00 }) {
            buffer.append(UnsafeRawBufferPointer(bytes))
            return
        }
        guard bytes.allSatisfy({ $0 < 0x80 }) else {
            appendSanitized(String(decoding: bytes, as: UTF8.self), into: &buffer)
            return
        }
        _ = buffer.withUnsafeWritableBytes(minimumCapacity: bytes.count) { space in
            for index in 0..<bytes.count {
                let byte = bytes[index]
                space[index] = (byte == 0x0D || byte == 0x0A || byte == 0x00) ? 0x20 : byte
            }
            return bytes.count
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
