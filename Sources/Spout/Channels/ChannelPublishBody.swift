/// The body of `POST /channels/{name}/events`: `{"data": <any JSON>, "event": "<type>"}`, or a non-empty array
/// of such objects, read strictly (RFC 8259) in one pass that also produces each `data` as compact JSON text.
///
/// Strict means: valid UTF-8, no trailing commas or comments, no members other than `data` and `event`, no
/// member twice, nesting at most ``maxDepth`` deep (so no input can exhaust the stack). Every refusal is a
/// ``Problem`` that says where and what.
///
/// **Thread safety:** value type; not shared.
struct ChannelPublishBody {
    /// The events, in the order given.
    let publications: [ChannelPublication]

    /// Nesting deeper than this is refused.
    static let maxDepth = 64
    /// The longest `event` type, in characters (Unicode scalars, as JSON Schema's `maxLength` counts).
    static let maxTypeCharacters = 128
    /// Event types the stream itself uses (`reset`, `gap`, `end`, and `error` as the sequence streams do): a
    /// publisher may not send them, so a client can trust what they say.
    static let reservedTypes: Set<String> = ["reset", "gap", "end", "error"]

    /// Whether `scalar` is a control character (Unicode general category Cc): C0 (U+0000–U+001F), DEL (U+007F)
    /// and C1 (U+0080–U+009F, NEL included), none of which an event type may hold.
    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    /// Reads `body`; each `data` may be at most `maxDataBytes` of compact JSON (`413` beyond).
    init(_ body: [UInt8], maxDataBytes: Int) throws(Problem) {
        guard String(validating: body, as: UTF8.self) != nil else {
            throw .invalidBody("the body is not valid UTF-8")
        }
        var reader = Reader(bytes: body)
        reader.skipWhitespace()
        var publications: [ChannelPublication] = []
        switch reader.peek {
        case UInt8(ascii: "{"):
            publications.append(try reader.publication(maxDataBytes: maxDataBytes, position: nil))
        case UInt8(ascii: "["):
            reader.index += 1
            reader.skipWhitespace()
            if reader.peek == UInt8(ascii: "]") {
                throw .invalidBody("the array is empty; send at least one {\"data\": …} object")
            }
            while true {
                reader.skipWhitespace()
                guard reader.peek == UInt8(ascii: "{") else {
                    throw .invalidBody("item \(publications.count) of the array is not an object {\"data\": …}")
                }
                publications.append(try reader.publication(maxDataBytes: maxDataBytes, position: publications.count))
                reader.skipWhitespace()
                if reader.peek == UInt8(ascii: ",") {
                    reader.index += 1
                    continue
                }
                guard reader.peek == UInt8(ascii: "]") else { throw reader.unexpected("',' or ']'") }
                reader.index += 1
                break
            }
        case nil:
            throw .invalidBody("the body is empty; send {\"data\": <JSON>}")
        default:
            throw .invalidBody("the body must be an object {\"data\": <JSON>} or an array of them")
        }
        reader.skipWhitespace()
        guard reader.peek == nil else { throw reader.unexpected("the end of the body") }
        self.publications = publications
    }

    /// A cursor over the body's bytes.
    private struct Reader {
        let bytes: [UInt8]
        var index = 0

        var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func skipWhitespace() {
            while let byte = peek, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
        }

        func unexpected(_ expected: String) -> Problem {
            guard let byte = peek else { return .invalidBody("the body ends early; expected \(expected)") }
            let shown = byte >= 0x20 && byte < 0x7F ? "'\(Character(Unicode.Scalar(byte)))'" : "byte \(byte)"
            return .invalidBody("expected \(expected) at offset \(index), found \(shown)")
        }

        /// One `{"data": …, "event": …}` object; `position` is its index in an array, if in one.
        mutating func publication(maxDataBytes: Int, position: Int?) throws(Problem) -> ChannelPublication {
            let place = position.map { " in item \($0)" } ?? ""
            index += 1  // {
            var data: [UInt8]?
            var type: String?
            var sawType = false
            skipWhitespace()
            if peek == UInt8(ascii: "}") {
                throw .invalidBody("missing \"data\"\(place): send {\"data\": <JSON>}")
            }
            while true {
                skipWhitespace()
                guard peek == UInt8(ascii: "\"") else { throw unexpected("a member name") }
                let name = try string()
                skipWhitespace()
                guard peek == UInt8(ascii: ":") else { throw unexpected("':'") }
                index += 1
                skipWhitespace()
                switch name {
                case "data":
                    guard data == nil else { throw .invalidBody("\"data\" is given twice\(place)") }
                    var compact: [UInt8] = []
                    try value(into: &compact, depth: 1)
                    guard compact.count <= maxDataBytes else {
                        throw .contentTooLarge(
                            "the data\(place) is \(compact.count) bytes of compact JSON; at most \(maxDataBytes) "
                                + "(channels.maxEventBytes)"
                        )
                    }
                    data = compact
                case "event":
                    guard !sawType else { throw .invalidBody("\"event\" is given twice\(place)") }
                    sawType = true
                    guard peek == UInt8(ascii: "\"") else {
                        throw .invalidBody("\"event\"\(place) must be a string (the SSE event type)")
                    }
                    let text = try string()
                    guard !text.isEmpty, text.unicodeScalars.count <= ChannelPublishBody.maxTypeCharacters,
                        !text.unicodeScalars.contains(where: ChannelPublishBody.isControl)
                    else {
                        throw .invalidBody(
                            "\"event\"\(place) must be 1–\(ChannelPublishBody.maxTypeCharacters) characters without "
                                + "control characters"
                        )
                    }
                    guard !ChannelPublishBody.reservedTypes.contains(text) else {
                        throw .invalidBody(
                            "\"event\"\(place) may not be \"\(text)\": reset, gap, end and error are the stream's own "
                                + "frames"
                        )
                    }
                    type = text
                default:
                    throw .invalidBody(
                        "unknown member \"\(Routes.clip(name))\"\(place); an event has \"data\" and an optional \"event\""
                    )
                }
                skipWhitespace()
                if peek == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                guard peek == UInt8(ascii: "}") else { throw unexpected("',' or '}'") }
                index += 1
                break
            }
            guard let data else { throw .invalidBody("missing \"data\"\(place): send {\"data\": <JSON>}") }
            return ChannelPublication(type: type, data: data)
        }

        /// Any JSON value, appended to `out` without insignificant whitespace.
        mutating func value(into out: inout [UInt8], depth: Int) throws(Problem) {
            guard depth <= ChannelPublishBody.maxDepth else {
                throw .invalidBody("the data nests deeper than \(ChannelPublishBody.maxDepth) levels")
            }
            skipWhitespace()
            guard let byte = peek else { throw unexpected("a JSON value") }
            switch byte {
            case UInt8(ascii: "{"):
                out.append(byte)
                index += 1
                skipWhitespace()
                if peek == UInt8(ascii: "}") {
                    out.append(UInt8(ascii: "}"))
                    index += 1
                    return
                }
                while true {
                    skipWhitespace()
                    guard peek == UInt8(ascii: "\"") else { throw unexpected("a member name") }
                    try rawString(into: &out)
                    skipWhitespace()
                    guard peek == UInt8(ascii: ":") else { throw unexpected("':'") }
                    out.append(UInt8(ascii: ":"))
                    index += 1
                    try value(into: &out, depth: depth + 1)
                    skipWhitespace()
                    guard let next = peek, next == UInt8(ascii: ",") || next == UInt8(ascii: "}") else {
                        throw unexpected("',' or '}'")
                    }
                    out.append(next)
                    index += 1
                    if next == UInt8(ascii: "}") { return }
                }
            case UInt8(ascii: "["):
                out.append(byte)
                index += 1
                skipWhitespace()
                if peek == UInt8(ascii: "]") {
                    out.append(UInt8(ascii: "]"))
                    index += 1
                    return
                }
                while true {
                    try value(into: &out, depth: depth + 1)
                    skipWhitespace()
                    guard let next = peek, next == UInt8(ascii: ",") || next == UInt8(ascii: "]") else {
                        throw unexpected("',' or ']'")
                    }
                    out.append(next)
                    index += 1
                    if next == UInt8(ascii: "]") { return }
                }
            case UInt8(ascii: "\""):
                try rawString(into: &out)
            case UInt8(ascii: "t"): try literal("true", into: &out)
            case UInt8(ascii: "f"): try literal("false", into: &out)
            case UInt8(ascii: "n"): try literal("null", into: &out)
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                try number(into: &out)
            default:
                throw unexpected("a JSON value")
            }
        }

        private mutating func literal(_ word: StaticString, into out: inout [UInt8]) throws(Problem) {
            let expected = UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount)
            guard index + expected.count <= bytes.count, bytes[index..<(index + expected.count)].elementsEqual(expected)
            else {
                throw unexpected("\(word)")
            }
            out.append(contentsOf: expected)
            index += expected.count
        }

        /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, copied as written.
        private mutating func number(into out: inout [UInt8]) throws(Problem) {
            let start = index
            if peek == UInt8(ascii: "-") { index += 1 }
            guard let first = peek, isDigit(first) else { throw unexpected("a digit") }
            index += 1
            if first != UInt8(ascii: "0") { skipDigits() }
            if peek == UInt8(ascii: ".") {
                index += 1
                guard let digit = peek, isDigit(digit) else { throw unexpected("a digit after '.'") }
                skipDigits()
            }
            if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
                index += 1
                if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { index += 1 }
                guard let digit = peek, isDigit(digit) else { throw unexpected("a digit in the exponent") }
                skipDigits()
            }
            out.append(contentsOf: bytes[start..<index])
        }

        private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

        private mutating func skipDigits() {
            while let byte = peek, isDigit(byte) { index += 1 }
        }

        /// A string, validated and copied as written (escapes kept).
        private mutating func rawString(into out: inout [UInt8]) throws(Problem) {
            let start = index
            try scanString { _ in }
            out.append(contentsOf: bytes[start..<index])
        }

        /// A string, decoded (a lone surrogate escape becomes U+FFFD).
        mutating func string() throws(Problem) -> String {
            var units: [UInt16] = []
            var utf8: [UInt8] = []
            try scanString { piece in
                switch piece {
                case .byte(let byte):
                    utf8.append(byte)
                case .unit(let unit):
                    if !utf8.isEmpty {
                        units.append(contentsOf: String(decoding: utf8, as: UTF8.self).utf16)
                        utf8.removeAll()
                    }
                    units.append(UInt16(truncatingIfNeeded: unit))
                }
            }
            if !utf8.isEmpty { units.append(contentsOf: String(decoding: utf8, as: UTF8.self).utf16) }
            return String(decoding: units, as: UTF16.self)
        }

        enum Piece {
            /// A byte of the string's UTF-8 as written.
            case byte(UInt8)
            /// A UTF-16 code unit from an escape.
            case unit(UInt32)
        }

        /// Walks a string from its opening quote past its closing one, checking escapes and control
        /// characters; hands each piece to `visit`.
        private mutating func scanString(_ visit: (Piece) -> Void) throws(Problem) {
            index += 1  // "
            while true {
                guard let byte = peek else { throw unexpected("'\"' to end the string") }
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    return
                case UInt8(ascii: "\\"):
                    guard let escape = peek else { throw unexpected("an escape") }
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): visit(.byte(escape))
                    case UInt8(ascii: "b"): visit(.byte(0x08))
                    case UInt8(ascii: "f"): visit(.byte(0x0C))
                    case UInt8(ascii: "n"): visit(.byte(0x0A))
                    case UInt8(ascii: "r"): visit(.byte(0x0D))
                    case UInt8(ascii: "t"): visit(.byte(0x09))
                    case UInt8(ascii: "u"):
                        var unit: UInt32 = 0
                        for _ in 0..<4 {
                            guard let hex = peek, let digit = Self.hexValue(hex) else {
                                throw unexpected("four hex digits after \\u")
                            }
                            unit = unit << 4 | digit
                            index += 1
                        }
                        visit(.unit(unit))
                    default:
                        index -= 1
                        throw unexpected("an escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u)")
                    }
                case 0x00..<0x20:
                    index -= 1
                    throw unexpected("no control character inside a string (escape it)")
                default:
                    visit(.byte(byte))
                }
            }
        }

        private static func hexValue(_ byte: UInt8) -> UInt32? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
            default: nil
            }
        }
    }
}
