/// Why the bytes from a Redis server could not be read as RESP; each case carries the offending value or the limit.
///
/// Offending values are carried as escaped text: printable ASCII as is, any other byte as `\xNN`, at most 64 bytes
/// followed by `...`. After any of these the connection is unusable (the parser cannot find the start of the next
/// value), so the owner closes it.
///
/// **Ownership:** A value; thrown by ``RESPParser/next()``.
/// **Thread safety:** Value type; not shared.
public enum RESPParseError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A value starts with a byte that is no RESP2 or RESP3 type. RESP3's streamed-aggregate parts (`;`, `.`)
    /// land here too: Redis never sends them.
    case unknownType(UInt8)
    /// A line ends in LF without the CR before it.
    case bareLineFeed
    /// A line holds a CR that is not followed by its LF.
    case bareCarriageReturn
    /// A line (type byte and text, without CRLF) is longer than the limit, in bytes.
    case lineTooLong(limit: Int)
    /// An integer (`:`) is not an optional sign and decimal digits, or does not fit in 64 bits.
    case invalidInteger(String)
    /// A length or count is not `-1` (where a null is allowed) or decimal digits, or does not fit in `Int`.
    /// RESP3's streamed forms (`$?`, `*?`) land here: Redis never sends them.
    case invalidLength(String)
    /// A double (`,`) is not `[sign]digits[.digits][e[sign]digits]`, `inf`, `-inf` or `nan`.
    case invalidDouble(String)
    /// A boolean (`#`) is not `t` or `f`.
    case invalidBoolean(String)
    /// A big number (`(`) is not an optional sign and decimal digits.
    case invalidBigNumber(String)
    /// A null (`_`) has text after its type byte.
    case invalidNull(String)
    /// A verbatim string (`=`) does not start with a three-byte format and a colon.
    case invalidVerbatimString(String)
    /// The bytes of a bulk string, bulk error or verbatim string are not followed by CRLF.
    case invalidBulkTerminator
    /// A bulk string, bulk error or verbatim string declares more bytes than the limit.
    case bulkTooLong(length: Int, limit: Int)
    /// An aggregate declares more elements (pairs, for a map or attribute) than the limit.
    case aggregateTooLarge(count: Int, limit: Int)
    /// Aggregates nest deeper than the limit.
    case nestingTooDeep(limit: Int)
    /// One value holds more bytes than the limit before it is complete (see
    /// ``RESPParser/Configuration/maxBufferedBytes``).
    case valueTooLarge(limit: Int)

    /// A short lowercase message saying what was wrong.
    public var description: String {
        switch self {
        case .unknownType(let byte):
            return "unknown type byte \"\(RESPText.quoted([byte]))\""
        case .bareLineFeed:
            return "line ends with a bare lf; lines must end with crlf"
        case .bareCarriageReturn:
            return "line holds a cr not followed by lf"
        case .lineTooLong(let limit):
            return "line exceeds \(limit) bytes"
        case .invalidInteger(let text):
            return "integer must be a signed 64-bit decimal, got \"\(text)\""
        case .invalidLength(let text):
            return "length must be a non-negative decimal (or -1 for null), got \"\(text)\""
        case .invalidDouble(let text):
            return "double must be decimal, inf, -inf or nan, got \"\(text)\""
        case .invalidBoolean(let text):
            return "boolean must be t or f, got \"\(text)\""
        case .invalidBigNumber(let text):
            return "big number must be a signed decimal, got \"\(text)\""
        case .invalidNull(let text):
            return "null must have nothing after its type byte, got \"\(text)\""
        case .invalidVerbatimString(let text):
            return "verbatim string must start with a three-byte format and a colon, got \"\(text)\""
        case .invalidBulkTerminator:
            return "bulk data must be followed by crlf"
        case .bulkTooLong(let length, let limit):
            return "bulk length \(length) exceeds \(limit) bytes"
        case .aggregateTooLarge(let count, let limit):
            return "aggregate of \(count) elements exceeds \(limit)"
        case .nestingTooDeep(let limit):
            return "aggregates nest deeper than \(limit) levels"
        case .valueTooLarge(let limit):
            return "value exceeds \(limit) buffered bytes before it is complete"
        }
    }
}
