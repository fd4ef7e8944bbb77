/// One value of the Redis serialization protocol as a server sends it: the RESP2 types and the RESP3 types
/// Redis 7 uses.
///
/// The null forms are kept apart because they are apart on the wire: RESP2 answers a missing value with a null
/// bulk string (`$-1`, ``bulkString(_:)`` holding nil) or a null array (`*-1`, ``array(_:)`` holding nil); RESP3
/// with ``null``. ``isNull`` covers all three.
///
/// Text-like values that are lines on the wire (simple strings, errors, big numbers) are `String`s, decoded as
/// UTF-8 with invalid bytes replaced; binary-safe values (bulk strings, verbatim strings) keep their bytes.
///
/// A value is as deep as the aggregates it nests, and comparing, printing or releasing it recurses once per level;
/// ``RESPParser/Configuration/maxDepth`` bounds that for values read from the network.
///
/// **Ownership:** A value; aggregates share their element storage copy-on-write.
/// **Thread safety:** Value type; not shared.
public enum RESPValue: Sendable, Hashable {
    /// `+OK`: a short status line.
    case simpleString(String)
    /// `-ERR message`: an error reply. The first word is the error code by convention (`ERR`, `WRONGTYPE`, …).
    case error(String)
    /// `:42`: a signed 64-bit integer.
    case integer(Int64)
    /// `$5 hello`: binary-safe bytes; nil is RESP2's null bulk string `$-1`.
    case bulkString([UInt8]?)
    /// `*2 …`: an ordered list of values; nil is RESP2's null array `*-1`.
    case array([RESPValue]?)
    /// `_`: RESP3's null.
    case null
    /// `#t` / `#f`: RESP3's boolean.
    case boolean(Bool)
    /// `,3.14`: RESP3's double, including `inf`, `-inf` and `nan`.
    case double(Double)
    /// `(12345678901234567890`: RESP3's integer of any size, as its decimal text with an optional leading `-`.
    case bigNumber(String)
    /// `!11 ERR message`: RESP3's binary-safe error, decoded as text.
    case bulkError(String)
    /// `=15 txt:Some string`: RESP3's string with a three-letter format (`txt`, `mkd`) naming how to show it.
    case verbatimString(format: String, text: [UInt8])
    /// `%2 …`: RESP3's map, as ordered key-value pairs (keys may repeat on the wire; nothing is merged).
    case map([Pair])
    /// `~3 …`: RESP3's set, in wire order.
    case set([RESPValue])
    /// `|1 …` followed by a value: RESP3 metadata about the value that follows. The second element is that value.
    indirect case attribute([Pair], RESPValue)
    /// `>3 …`: RESP3's out-of-band data, such as a pub/sub message; never the reply to a command.
    case push([RESPValue])

    /// One entry of a ``RESPValue/map(_:)`` or ``RESPValue/attribute(_:_:)``.
    ///
    /// **Ownership:** A value.
    /// **Thread safety:** Value type; not shared.
    public struct Pair: Sendable, Hashable {
        public var key: RESPValue
        public var value: RESPValue

        public init(_ key: RESPValue, _ value: RESPValue) {
            self.key = key
            self.value = value
        }
    }
}

extension RESPValue {
    /// A bulk string holding the UTF-8 bytes of `text`.
    public static func bulkString(_ text: String) -> RESPValue {
        .bulkString(Array(text.utf8))
    }

    /// Whether this is any of the three nulls: `_`, `$-1` or `*-1`.
    public var isNull: Bool {
        switch self {
        case .null, .bulkString(nil), .array(nil):
            return true
        default:
            return false
        }
    }

    /// The value without the attributes in front of it (the value itself when it has none).
    public var withoutAttributes: RESPValue {
        var value = self
        while case .attribute(_, let inner) = value {
            value = inner
        }
        return value
    }

    /// The message of an error reply (simple or bulk), or nil.
    public var errorMessage: String? {
        switch self {
        case .error(let message), .bulkError(let message):
            return message
        default:
            return nil
        }
    }

    /// The bytes of a string-like value: bulk string, simple string, verbatim string (without its format); nil
    /// for anything else, including the null bulk string.
    public var bytes: [UInt8]? {
        switch self {
        case .bulkString(let bytes):
            return bytes
        case .simpleString(let text):
            return Array(text.utf8)
        case .verbatimString(_, let text):
            return text
        default:
            return nil
        }
    }

    /// ``bytes`` decoded as UTF-8 (invalid bytes replaced), or nil.
    public var string: String? {
        if case .simpleString(let text) = self {
            return text
        }
        return bytes.map { String(decoding: $0, as: UTF8.self) }
    }

    /// The integer of an integer reply, or nil.
    public var integer: Int64? {
        if case .integer(let value) = self {
            return value
        }
        return nil
    }

    /// The elements of an array, set or push; nil for anything else, including the null array.
    public var elements: [RESPValue]? {
        switch self {
        case .array(let elements):
            return elements
        case .set(let elements), .push(let elements):
            return elements
        default:
            return nil
        }
    }
}
