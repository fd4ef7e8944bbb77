/// A JSON value as read from a configuration file, with the members of objects in file order.
///
/// Configuration files are read with the strict RFC 8259 ``StrictJSONReader`` rather than `JSONSerialization` so
/// that a mistake is reported with its line and column, trailing commas and duplicate keys are rejected, and an
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

    /// Parses one JSON document with ``StrictJSONReader`` (RFC 8259, no extensions: no comments, no trailing commas,
    /// no duplicate keys; a leading UTF-8 byte order mark is allowed).
    ///
    /// - Throws: ``SyntaxError`` with the 1-based line and column of the offending byte.
    static func parse(_ bytes: [UInt8]) throws(SyntaxError) -> ConfigJSON {
        do throws(StrictJSONReader.SyntaxError) {
            return try bytes.withUnsafeBufferPointer { buffer throws(StrictJSONReader.SyntaxError) in
                var reader = StrictJSONReader(buffer)
                let value = try value(&reader, depth: 0)
                try reader.end()
                return value
            }
        } catch {
            throw SyntaxError(error, in: bytes)
        }
    }

    /// The value at `reader`'s cursor, which is at `depth`, as a tree.
    private static func value(_ reader: inout StrictJSONReader, depth: Int) throws(StrictJSONReader.SyntaxError)
        -> ConfigJSON
    {
        switch reader.peek() {
        case .object:
            var members: [(name: String, value: ConfigJSON)] = []
            try reader.members(depth: depth, syntax: { $0 }) {
                (reader: inout StrictJSONReader, name: StrictJSONReader.Name) throws(StrictJSONReader.SyntaxError) in
                members.append((reader.text(name), try value(&reader, depth: depth + 1)))
            }
            return .object(members)
        case .array:
            var elements: [ConfigJSON] = []
            try reader.elements(depth: depth, syntax: { $0 }) {
                (reader: inout StrictJSONReader) throws(StrictJSONReader.SyntaxError) in
                elements.append(try value(&reader, depth: depth + 1))
            }
            return .array(elements)
        case .string:
            return .string(try reader.string())
        case .number:
            let text = try reader.numberText()
            return .number(text: text, value: Double(text) ?? .nan)
        case .literal, nil:
            return try reader.literal().map(ConfigJSON.boolean) ?? .null
        }
    }

    /// Where and why a document is not valid JSON.
    struct SyntaxError: Error, Equatable {
        var line: Int
        var column: Int
        var reason: String
    }
}

extension ConfigJSON.SyntaxError {
    /// `error`, placed by line and column (1-based; columns count characters, not UTF-8 bytes) in `bytes`.
    fileprivate init(_ error: StrictJSONReader.SyntaxError, in bytes: [UInt8]) {
        var line = 1
        var column = 1
        for byte in bytes.prefix(error.offset) {
            if byte == 0x0A {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                column += 1  // count characters, not UTF-8 continuation bytes
            }
        }
        self.init(line: line, column: column, reason: error.reason)
    }
}
