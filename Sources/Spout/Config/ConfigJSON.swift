/// A JSON value as read from a configuration file, with the members of objects in file order.
///
/// Configuration files are read with this strict RFC 8259 parser rather than `JSONSerialization` so that a
/// mistake is reported with its line and column, trailing commas and duplicate keys are rejected, and an
/// integer, a number, a boolean and a string stay distinct types (no `NSNumber` guessing).
///
/// **Thread safety:** value type; not shared.
enum ConfigJSON: Equatable, Sendable {
    case object([(name: String, value: ConfigJSON)])
    case array([ConfigJSON])
    case string(String)
    /// A number, with its text as written (so `80` and `80.0` can be told apart) and its value.
    case number(text: String, value: Double)
    case boolean(Bool)
    case null

    static func == (lhs: ConfigJSON, rhs: ConfigJSON) -> Bool {
        switch (lhs, rhs) {
        case (.object(let left), .object(let right)):
            left.count == right.count && zip(left, right).allSatisfy { $0.name == $1.name && $0.value == $1.value }
        case (.array(let left), .array(let right)): left == right
        case (.string(let left), .string(let right)): left == right
        case (.number(let left, _), .number(let right, _)): left == right
        case (.boolean(let left), .boolean(let right)): left == right
        case (.null, .null): true
        default: false
        }
    }

    /// How the value reads in an error message: `a string "8081"`, `a number 80.5`, `true`, `null`, `an array`.
    var summary: String {
        switch self {
        case .object: "an object"
        case .array: "an array"
        case .string(let text): "a string \(ConfigJSON.quote(text))"
        case .number(let text, _): "a number \(text)"
        case .boolean(let value): "a boolean \(value)"
        case .null: "null"
        }
    }

    /// `text` in double quotes, cut to 64 characters, with control characters escaped: safe to print.
    static func quote(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars.prefix(64) {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                result += "\\u{\(String(scalar.value, radix: 16))}"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + (text.unicodeScalars.count > 64 ? "…\"" : "\"")
    }

    /// Parses one JSON document (RFC 8259, no extensions: no comments, no trailing commas, no duplicate keys).
    ///
    /// - Throws: ``SyntaxError`` with the 1-based line and column of the offending byte.
    static func parse(_ bytes: [UInt8]) throws(SyntaxError) -> ConfigJSON {
        var parser = Parser(bytes: bytes)
        parser.skipWhitespace()
        let value = try parser.value(depth: 0)
        parser.skipWhitespace()
        guard parser.atEnd else { throw parser.error("unexpected \(parser.describeCurrent()) after the document") }
        return value
    }

    /// Where and why a document is not valid JSON.
    struct SyntaxError: Error, Equatable {
        var line: Int
        var column: Int
        var reason: String
    }

    /// A cursor over the document's bytes.
    private struct Parser {
        let bytes: [UInt8]
        var position = 0

        /// Nesting deeper than this is refused rather than recursed into (a configuration needs two levels).
        static let maxDepth = 64

        var atEnd: Bool { position >= bytes.count }

        init(bytes: [UInt8]) {
            self.bytes = bytes
            // A UTF-8 byte order mark is allowed before the document (RFC 8259 §8.1 lets parsers ignore it).
            if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { position = 3 }
        }

        mutating func skipWhitespace() {
            while position < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[position]) { position += 1 }
        }

        func error(_ reason: String, at offset: Int? = nil) -> SyntaxError {
            let offset = min(offset ?? position, bytes.count)
            var line = 1
            var column = 1
            var index = 0
            while index < offset {
                if bytes[index] == 0x0A {
                    line += 1
                    column = 1
                } else if bytes[index] & 0xC0 != 0x80 {
                    column += 1  // count characters, not UTF-8 continuation bytes
                }
                index += 1
            }
            return SyntaxError(line: line, column: column, reason: reason)
        }

        func describeCurrent() -> String {
            guard position < bytes.count else { return "end of file" }
            let byte = bytes[position]
            if byte >= 0x21 && byte < 0x7F { return "\"\(Character(Unicode.Scalar(byte)))\"" }
            return "byte 0x\(String(byte, radix: 16))"
        }

        mutating func value(depth: Int) throws(SyntaxError) -> ConfigJSON {
            guard depth < Self.maxDepth else { throw error("nesting deeper than \(Self.maxDepth) levels") }
            guard position < bytes.count else { throw error("expected a value, got end of file") }
            switch bytes[position] {
            case UInt8(ascii: "{"): return try object(depth: depth)
            case UInt8(ascii: "["): return try array(depth: depth)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): return try literal("true", .boolean(true))
            case UInt8(ascii: "f"): return try literal("false", .boolean(false))
            case UInt8(ascii: "n"): return try literal("null", .null)
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
            default: throw error("expected a value, got \(describeCurrent())")
            }
        }

        mutating func literal(_ word: String, _ value: ConfigJSON) throws(SyntaxError) -> ConfigJSON {
            let expected = Array(word.utf8)
            guard bytes[position...].starts(with: expected) else {
                throw error("expected a value, got \(describeCurrent())")
            }
            position += expected.count
            return value
        }

        mutating func object(depth: Int) throws(SyntaxError) -> ConfigJSON {
            position += 1  // {
            var members: [(name: String, value: ConfigJSON)] = []
            skipWhitespace()
            if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
                position += 1
                return .object(members)
            }
            while true {
                skipWhitespace()
                guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else {
                    if position < bytes.count, bytes[position] == UInt8(ascii: "}"), !members.isEmpty {
                        throw error("trailing comma before \"}\"")
                    }
                    throw error("expected a member name in double quotes, got \(describeCurrent())")
                }
                let nameStart = position
                let name = try string()
                if members.contains(where: { $0.name == name }) {
                    throw error("duplicate key \(ConfigJSON.quote(name))", at: nameStart)
                }
                skipWhitespace()
                guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else {
                    throw error("expected \":\" after the member name, got \(describeCurrent())")
                }
                position += 1
                skipWhitespace()
                members.append((name, try value(depth: depth + 1)))
                if try anotherFollows(before: "}") { continue }
                return .object(members)
            }
        }

        mutating func array(depth: Int) throws(SyntaxError) -> ConfigJSON {
            position += 1  // [
            var elements: [ConfigJSON] = []
            skipWhitespace()
            if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
                position += 1
                return .array(elements)
            }
            while true {
                skipWhitespace()
                if position < bytes.count, bytes[position] == UInt8(ascii: "]"), !elements.isEmpty {
                    throw error("trailing comma before \"]\"")
                }
                elements.append(try value(depth: depth + 1))
                if try anotherFollows(before: "]") { continue }
                return .array(elements)
            }
        }

        /// After a member or an element: skips a `,` and answers `true` (another follows), or skips `closer`
        /// and answers `false` (the object or array ends); anything else is an error naming both.
        mutating func anotherFollows(before closer: Unicode.Scalar) throws(SyntaxError) -> Bool {
            skipWhitespace()
            guard position < bytes.count else { throw error("expected \",\" or \"\(closer)\", got end of file") }
            if bytes[position] == UInt8(ascii: ",") {
                position += 1
                return true
            }
            guard bytes[position] == UInt8(ascii: closer) else {
                throw error("expected \",\" or \"\(closer)\", got \(describeCurrent())")
            }
            position += 1
            return false
        }

        mutating func string() throws(SyntaxError) -> String {
            let start = position
            position += 1  // "
            var scalars = String.UnicodeScalarView()
            var runStart = position
            func flushRun(_ end: Int) throws(SyntaxError) {
                guard runStart < end else { return }
                guard let text = String(validating: bytes[runStart..<end], as: UTF8.self) else {
                    throw error("a string that is not valid UTF-8", at: runStart)
                }
                scalars.append(contentsOf: text.unicodeScalars)
            }
            while position < bytes.count {
                let byte = bytes[position]
                if byte == UInt8(ascii: "\"") {
                    try flushRun(position)
                    position += 1
                    return String(scalars)
                }
                if byte < 0x20 { throw error("a control character inside a string (escape it)") }
                if byte == UInt8(ascii: "\\") {
                    try flushRun(position)
                    position += 1
                    scalars.append(try escape())
                    runStart = position
                    continue
                }
                position += 1
            }
            throw error("a string that never ends", at: start)
        }

        mutating func escape() throws(SyntaxError) -> Unicode.Scalar {
            guard position < bytes.count else { throw error("an escape that never ends") }
            let byte = bytes[position]
            position += 1
            switch byte {
            case UInt8(ascii: "\""): return "\""
            case UInt8(ascii: "\\"): return "\\"
            case UInt8(ascii: "/"): return "/"
            case UInt8(ascii: "b"): return "\u{08}"
            case UInt8(ascii: "f"): return "\u{0C}"
            case UInt8(ascii: "n"): return "\n"
            case UInt8(ascii: "r"): return "\r"
            case UInt8(ascii: "t"): return "\t"
            case UInt8(ascii: "u"):
                let high = try hex4()
                if (0xD800..<0xDC00).contains(high) {
                    guard bytes[position...].starts(with: [UInt8(ascii: "\\"), UInt8(ascii: "u")]) else {
                        throw error("a lone surrogate \\u\(String(high, radix: 16))")
                    }
                    position += 2
                    let low = try hex4()
                    guard (0xDC00..<0xE000).contains(low) else {
                        throw error("a lone surrogate \\u\(String(high, radix: 16))")
                    }
                    return Unicode.Scalar(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))!
                }
                guard let scalar = Unicode.Scalar(high) else {
                    throw error("a lone surrogate \\u\(String(high, radix: 16))")
                }
                return scalar
            default:
                position -= 1
                throw error("an unknown escape \\\(describeCurrent())")
            }
        }

        mutating func hex4() throws(SyntaxError) -> UInt32 {
            var value: UInt32 = 0
            for _ in 0..<4 {
                guard position < bytes.count, let digit = Self.hexValue(bytes[position]) else {
                    throw error("\\u needs four hex digits")
                }
                value = value << 4 | digit
                position += 1
            }
            return value
        }

        static func hexValue(_ byte: UInt8) -> UInt32? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
            default: nil
            }
        }

        mutating func number() throws(SyntaxError) -> ConfigJSON {
            let start = position
            func digits() -> Int {
                let from = position
                while position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) {
                    position += 1
                }
                return position - from
            }
            if bytes[position] == UInt8(ascii: "-") { position += 1 }
            let integerStart = position
            let integerDigits = digits()
            guard integerDigits > 0 else { throw error("a number needs digits after \"-\"") }
            if integerDigits > 1, bytes[integerStart] == UInt8(ascii: "0") {
                throw error("a number with a leading zero", at: integerStart)
            }
            if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
                position += 1
                guard digits() > 0 else { throw error("a number needs digits after \".\"") }
            }
            if position < bytes.count, bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E") {
                position += 1
                if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-")
                {
                    position += 1
                }
                guard digits() > 0 else { throw error("a number needs digits in its exponent") }
            }
            let text = String(decoding: bytes[start..<position], as: UTF8.self)
            return .number(text: text, value: Double(text) ?? .nan)
        }
    }
}
