/// A strict JSON reader for the small objects of a JWT (its protected header and its claims) that reads the members
/// it is asked for in place and builds no tree: a token is verified for every connection, and a general parse
/// (``ConfigJSON``: a value per member, a `String` per name) cost more than the HMAC it guards.
///
/// It accepts exactly what ``ConfigJSON`` accepts (RFC 8259; a leading UTF-8 byte order mark; nesting at most
/// ``maxDepth`` levels) and refuses what it refuses: trailing commas, a string that is not UTF-8 or holds a control
/// character, a lone surrogate, leading zeros, and a duplicate member in any object, however its name is escaped
/// (so no two readers of one token can disagree). Members not asked for are skipped, but checked just as strictly.
///
/// **Thread safety:** value type over borrowed bytes; used within the scope that lends them.
struct JWTJSON {
    /// Why a document is not JSON, for a refusal's detail.
    struct SyntaxError: Error, Equatable {
        let reason: String
    }

    /// A member name as it is in the document: its bytes between the quotes, and whether they hold an escape.
    struct Name {
        fileprivate let range: Range<Int>
        fileprivate let escaped: Bool
    }

    /// What the next value is.
    enum Kind {
        case object, array, string, number, literal
    }

    /// Nesting deeper than this is refused, as ``ConfigJSON`` refuses it.
    static let maxDepth = 64

    private let bytes: UnsafeBufferPointer<UInt8>
    private var position = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { position = 3 }
    }

    /// Reads the document, an object: `member` is called with each member's name, positioned on its value, and must
    /// read it (``string()``, ``number()``, ``elements(depth:_:)``, ``members(depth:_:)``) or ``skip(depth:)`` it.
    /// Throws `notObject` when the document is JSON but not an object.
    mutating func document<Failure: Error>(
        notObject: Failure,
        syntax: (SyntaxError) -> Failure,
        _ member: (inout JWTJSON, Name) throws(Failure) -> Void
    ) throws(Failure) {
        skipWhitespace()
        guard peek() == .object else {
            do throws(SyntaxError) {
                try skip(depth: 0)
                try end()
            } catch {
                throw syntax(error)
            }
            throw notObject
        }
        try members(depth: 0, syntax: syntax, member)
        do throws(SyntaxError) { try end() } catch { throw syntax(error) }
    }

    /// Nothing but whitespace is left.
    private mutating func end() throws(SyntaxError) {
        skipWhitespace()
        guard position == bytes.count else { throw SyntaxError(reason: "unexpected bytes after the document") }
    }

    /// The kind of the value at the cursor (after whitespace), or `nil` when none can start here.
    mutating func peek() -> Kind? {
        skipWhitespace()
        guard position < bytes.count else { return nil }
        switch bytes[position] {
        case UInt8(ascii: "{"): return .object
        case UInt8(ascii: "["): return .array
        case UInt8(ascii: "\""): return .string
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number
        case UInt8(ascii: "t"), UInt8(ascii: "f"), UInt8(ascii: "n"): return .literal
        default: return nil
        }
    }

    /// Whether `name` is `expected` (compared byte for byte, or decoded when the name holds an escape).
    func name(_ name: Name, is expected: StaticString) -> Bool {
        let literal = UnsafeBufferPointer(start: expected.utf8Start, count: expected.utf8CodeUnitCount)
        if !name.escaped { return equal(name.range, literal) }
        var copy = JWTJSON(bytes)
        copy.position = name.range.lowerBound - 1
        return (try? copy.string()).map { Array($0.utf8).elementsEqual(literal) } ?? false
    }

    /// The name, decoded.
    func text(_ name: Name) -> String {
        var copy = JWTJSON(bytes)
        copy.position = name.range.lowerBound - 1
        return (try? copy.string()) ?? ""
    }

    /// Reads the object at the cursor, calling `member` for each member (see ``document(notObject:syntax:_:)``).
    mutating func members<Failure: Error>(
        depth: Int,
        syntax: (SyntaxError) -> Failure,
        _ member: (inout JWTJSON, Name) throws(Failure) -> Void
    ) throws(Failure) {
        var names: [Name] = []
        names.reserveCapacity(8)
        var step = Step.first
        while true {
            let name: Name?
            do throws(SyntaxError) {
                name = try nextMember(depth: depth, step: &step, names: &names)
            } catch {
                throw syntax(error)
            }
            guard let name else { return }
            try member(&self, name)
        }
    }

    /// Reads the array at the cursor, calling `element` positioned on each element, which must read or skip it.
    mutating func elements<Failure: Error>(
        depth: Int,
        syntax: (SyntaxError) -> Failure,
        _ element: (inout JWTJSON) throws(Failure) -> Void
    ) throws(Failure) {
        var step = Step.first
        while true {
            let more: Bool
            do throws(SyntaxError) {
                more = try nextElement(depth: depth, step: &step)
            } catch {
                throw syntax(error)
            }
            guard more else { return }
            try element(&self)
        }
    }

    /// Where a reader is in an object or array.
    private enum Step {
        case first, next
    }

    /// The next member's name (the cursor then on its value), or `nil` after the closing `}`.
    private mutating func nextMember(depth: Int, step: inout Step, names: inout [Name]) throws(SyntaxError) -> Name? {
        skipWhitespace()
        if step == .first {
            guard depth < Self.maxDepth else {
                throw SyntaxError(reason: "nesting deeper than \(Self.maxDepth) levels")
            }
            position += 1  // {
            skipWhitespace()
            if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
                position += 1
                return nil
            }
            step = .next
        } else {
            guard position < bytes.count else { throw SyntaxError(reason: "expected \",\" or \"}\", got end of file") }
            if bytes[position] == UInt8(ascii: "}") {
                position += 1
                return nil
            }
            guard bytes[position] == UInt8(ascii: ",") else {
                throw SyntaxError(reason: "expected \",\" or \"}\" after a member")
            }
            position += 1
            skipWhitespace()
        }
        guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else {
            throw SyntaxError(reason: "expected a member name in double quotes")
        }
        let name = try nameSpan()
        for other in names where same(other, name) {
            throw SyntaxError(reason: "duplicate key \(ConfigJSON.quote(text(name)))")
        }
        names.append(name)
        skipWhitespace()
        guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else {
            throw SyntaxError(reason: "expected \":\" after the member name")
        }
        position += 1
        skipWhitespace()
        return name
    }

    /// Whether the cursor is on another element (after `[` or `,`); false after the closing `]`.
    private mutating func nextElement(depth: Int, step: inout Step) throws(SyntaxError) -> Bool {
        skipWhitespace()
        if step == .first {
            guard depth < Self.maxDepth else {
                throw SyntaxError(reason: "nesting deeper than \(Self.maxDepth) levels")
            }
            position += 1  // [
            skipWhitespace()
            if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
                position += 1
                return false
            }
            step = .next
            return true
        }
        guard position < bytes.count else { throw SyntaxError(reason: "expected \",\" or \"]\", got end of file") }
        if bytes[position] == UInt8(ascii: "]") {
            position += 1
            return false
        }
        guard bytes[position] == UInt8(ascii: ",") else { throw SyntaxError(reason: "expected \",\" or \"]\"") }
        position += 1
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
            throw SyntaxError(reason: "trailing comma before \"]\"")
        }
        return true
    }

    /// Whether the document's bytes in `range` are `other`.
    private func equal(_ range: Range<Int>, _ other: UnsafeBufferPointer<UInt8>) -> Bool {
        guard range.count == other.count else { return false }
        var index = 0
        while index < other.count {
            guard bytes[range.lowerBound + index] == other[index] else { return false }
            index += 1
        }
        return true
    }

    /// Whether two names are the same string.
    private func same(_ left: Name, _ right: Name) -> Bool {
        if !left.escaped && !right.escaped {
            return equal(left.range, UnsafeBufferPointer(rebasing: bytes[right.range]))
        }
        return text(left) == text(right)
    }

    /// Skips (and checks) the value at the cursor, nested objects' names included.
    mutating func skip(depth: Int) throws(SyntaxError) {
        switch peek() {
        case .object:
            var names: [Name] = []
            var step = Step.first
            while try nextMember(depth: depth, step: &step, names: &names) != nil { try skip(depth: depth + 1) }
        case .array:
            var step = Step.first
            while try nextElement(depth: depth, step: &step) { try skip(depth: depth + 1) }
        case .string: _ = try nameSpan()
        case .number: _ = try number()
        case .literal:
            for word in ["true", "false", "null"] as [StaticString] {
                let literal = UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount)
                if bytes[position...].starts(with: literal) {
                    position += literal.count
                    return
                }
            }
            throw SyntaxError(reason: "expected a value")
        case nil:
            throw SyntaxError(reason: position < bytes.count ? "expected a value" : "expected a value, got end of file")
        }
    }

    /// The string at the cursor, decoded; throws when the cursor is not on a valid string.
    mutating func string() throws(SyntaxError) -> String {
        guard peek() == .string else { throw SyntaxError(reason: "expected a string") }
        let span = try nameSpan()
        let raw = UnsafeBufferPointer(rebasing: bytes[span.range])
        guard span.escaped else { return String(decoding: raw, as: UTF8.self) }  // validated by nameSpan
        var scalars = String.UnicodeScalarView()
        var index = 0
        while index < raw.count {
            if raw[index] != UInt8(ascii: "\\") {
                var end = index
                while end < raw.count, raw[end] != UInt8(ascii: "\\") { end += 1 }
                scalars.append(contentsOf: String(decoding: raw[index..<end], as: UTF8.self).unicodeScalars)
                index = end
                continue
            }
            let (scalar, length) = try Self.escape(raw, at: index + 1)
            scalars.append(scalar)
            index += 1 + length
        }
        return String(scalars)
    }

    /// The string at the cursor as raw bytes (between its quotes) when it holds no escape, for readers that only
    /// compare it: `nil` when it does (then read it with ``string()``).
    mutating func unescapedString() throws(SyntaxError) -> UnsafeBufferPointer<UInt8>? {
        guard peek() == .string else { throw SyntaxError(reason: "expected a string") }
        let start = position
        let span = try nameSpan()
        guard !span.escaped else {
            position = start
            return nil
        }
        return UnsafeBufferPointer(rebasing: bytes[span.range])
    }

    /// The number at the cursor, checked against RFC 8259's grammar.
    mutating func number() throws(SyntaxError) -> Double {
        guard peek() == .number else { throw SyntaxError(reason: "expected a number") }
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
        guard integerDigits > 0 else { throw SyntaxError(reason: "a number needs digits after \"-\"") }
        guard integerDigits == 1 || bytes[integerStart] != UInt8(ascii: "0") else {
            throw SyntaxError(reason: "a number with a leading zero")
        }
        var simple = integerDigits <= 15
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            position += 1
            guard digits() > 0 else { throw SyntaxError(reason: "a number needs digits after \".\"") }
            simple = false
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E") {
            position += 1
            if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") {
                position += 1
            }
            guard digits() > 0 else { throw SyntaxError(reason: "a number needs digits in its exponent") }
            simple = false
        }
        if simple {
            // An integer of at most 15 digits (every NumericDate until the year 33 658) is exact in a Double.
            var value: Int64 = 0
            for byte in bytes[integerStart..<position] { value = value * 10 + Int64(byte - UInt8(ascii: "0")) }
            return bytes[start] == UInt8(ascii: "-") ? -Double(value) : Double(value)
        }
        return Double(String(decoding: bytes[start..<position], as: UTF8.self)) ?? .nan
    }

    /// Steps over the string at the cursor (on its `"`), checking its escapes, control characters and UTF-8.
    private mutating func nameSpan() throws(SyntaxError) -> Name {
        position += 1  // "
        let start = position
        var escaped = false
        var ascii = true
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                let range = start..<position
                position += 1
                if !ascii, String(validating: bytes[range], as: UTF8.self) == nil {
                    throw SyntaxError(reason: "a string that is not valid UTF-8")
                }
                return Name(range: range, escaped: escaped)
            }
            if byte < 0x20 { throw SyntaxError(reason: "a control character inside a string (escape it)") }
            if byte >= 0x80 { ascii = false }
            if byte == UInt8(ascii: "\\") {
                escaped = true
                let (_, length) = try Self.escape(bytes, at: position + 1)
                position += 1 + length
                continue
            }
            position += 1
        }
        throw SyntaxError(reason: "a string that never ends")
    }

    /// The escape after a backslash at `index` (`n`, `u00e9`, a surrogate pair): its scalar and its length.
    private static func escape(_ bytes: UnsafeBufferPointer<UInt8>, at index: Int) throws(SyntaxError) -> (
        Unicode.Scalar, Int
    ) {
        guard index < bytes.count else { throw SyntaxError(reason: "an escape that never ends") }
        switch bytes[index] {
        case UInt8(ascii: "\""): return ("\"", 1)
        case UInt8(ascii: "\\"): return ("\\", 1)
        case UInt8(ascii: "/"): return ("/", 1)
        case UInt8(ascii: "b"): return ("\u{08}", 1)
        case UInt8(ascii: "f"): return ("\u{0C}", 1)
        case UInt8(ascii: "n"): return ("\n", 1)
        case UInt8(ascii: "r"): return ("\r", 1)
        case UInt8(ascii: "t"): return ("\t", 1)
        case UInt8(ascii: "u"):
            let high = try hex4(bytes, at: index + 1)
            if (0xD800..<0xDC00).contains(high) {
                guard index + 6 < bytes.count, bytes[index + 5] == UInt8(ascii: "\\"),
                    bytes[index + 6] == UInt8(ascii: "u")
                else { throw SyntaxError(reason: "a lone surrogate") }
                let low = try hex4(bytes, at: index + 7)
                guard (0xDC00..<0xE000).contains(low),
                    let scalar = Unicode.Scalar(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
                else { throw SyntaxError(reason: "a lone surrogate") }
                return (scalar, 11)
            }
            guard let scalar = Unicode.Scalar(high) else { throw SyntaxError(reason: "a lone surrogate") }
            return (scalar, 5)
        default:
            throw SyntaxError(reason: "an unknown escape")
        }
    }

    private static func hex4(_ bytes: UnsafeBufferPointer<UInt8>, at index: Int) throws(SyntaxError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw SyntaxError(reason: "\\u needs four hex digits") }
        var value: UInt32 = 0
        for offset in 0..<4 {
            guard let digit = hexValue(bytes[index + offset]) else {
                throw SyntaxError(reason: "\\u needs four hex digits")
            }
            value = value << 4 | digit
        }
        return value
    }

    private static func hexValue(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
        default: nil
        }
    }

    private mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }
}
