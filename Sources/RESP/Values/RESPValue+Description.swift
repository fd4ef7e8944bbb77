extension RESPValue: CustomStringConvertible {
    /// A one-line form for logs and test failures, close to `redis-cli`'s: `"bulk"`, `OK`, `(error) ERR …`,
    /// `(integer) 1`, `(nil)`, `[a, b]`, `{k: v}`, `~{a}`, `>[…]`. Bytes outside printable ASCII are escaped as
    /// `\xNN`; a bulk string longer than 256 bytes is cut with `...`.
    public var description: String {
        switch self {
        case .simpleString(let text):
            return text
        case .error(let message):
            return "(error) \(message)"
        case .integer(let value):
            return "(integer) \(value)"
        case .bulkString(nil), .array(nil), .null:
            return "(nil)"
        case .bulkString(let bytes?):
            return "\"\(RESPText.escaped(bytes, limit: 256))\""
        case .array(let elements?):
            return "[" + elements.map(\.description).joined(separator: ", ") + "]"
        case .boolean(let value):
            return "(boolean) \(value)"
        case .double(let value):
            return "(double) \(value)"
        case .bigNumber(let digits):
            return "(big number) \(digits)"
        case .bulkError(let message):
            return "(error) \(message)"
        case .verbatimString(let format, let text):
            return "(\(format)) \"\(RESPText.escaped(text, limit: 256))\""
        case .map(let pairs):
            return "{" + pairs.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + "}"
        case .set(let elements):
            return "~{" + elements.map(\.description).joined(separator: ", ") + "}"
        case .attribute(let pairs, let value):
            return "|{" + pairs.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + "} " + value.description
        case .push(let elements):
            return ">[" + elements.map(\.description).joined(separator: ", ") + "]"
        }
    }
}

extension RESPValue {
    /// A description cut short, that costs little however large the value: an aggregate is named with its element
    /// count, anything else is its ``description`` cut to 64 characters.
    package var briefDescription: String {
        switch self {
        case .array(let elements?):
            return "an array of \(elements.count) elements"
        case .set(let elements):
            return "a set of \(elements.count) elements"
        case .push(let elements):
            return "a push of \(elements.count) elements"
        case .map(let pairs):
            return "a map of \(pairs.count) pairs"
        case .attribute(_, let value):
            return value.briefDescription
        case .bulkString(let bytes?):
            return "\"\(RESPText.escaped(bytes, limit: 64))\""
        default:
            let text = description
            return text.count > 64 ? String(text.prefix(64)) + "..." : text
        }
    }
}

/// Bytes as printable text for messages.
enum RESPText {
    /// Printable ASCII as is (except `"` and `\`), every other byte as `\xNN`; at most `limit` bytes, then `...`.
    static func escaped(_ bytes: some Collection<UInt8>, limit: Int) -> String {
        let hex: [UInt8] = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(min(bytes.count, limit) &+ 3)
        for byte in bytes.prefix(limit) {
            if byte >= 0x20 && byte < 0x7F && byte != 0x22 && byte != 0x5C {
                text.append(byte)
            } else {
                text.append(contentsOf: [0x5C, 0x78, hex[Int(byte &>> 4)], hex[Int(byte & 0x0F)]])
            }
        }
        if bytes.count > limit {
            text.append(contentsOf: [0x2E, 0x2E, 0x2E])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The longest offending value an error carries, in bytes.
    static let maxQuotedBytes = 64

    /// `bytes` escaped and cut to ``maxQuotedBytes``, for an error's offending value.
    static func quoted(_ bytes: some Collection<UInt8>) -> String {
        escaped(bytes, limit: maxQuotedBytes)
    }
}
