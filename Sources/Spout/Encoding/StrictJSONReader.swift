/// Spout's one strict JSON reader: a pull reader over borrowed bytes that builds no tree and reads each value where
/// it is. Everything Spout reads as JSON goes through it: configuration files and key sets (``ConfigJSON`` builds its
/// tree by walking it), the protected header and claims of a JWT (read in place: a token is verified for every
/// connection, so only the members asked for are decoded), and publish bodies (``ChannelPublishBody`` copies each
/// `data` out compactly with ``copyCompact(depth:)``).
///
/// Strict means RFC 8259 and nothing more: no comments, no trailing commas, no leading zeros; a string is UTF-8 and
/// holds no control character and no lone surrogate; and no object holds a member twice, however its name is
/// escaped (so no two readers of one document can disagree on it). A leading UTF-8 byte order mark is skipped
/// (RFC 8259 §8.1 lets a parser ignore it). At most ``maxDepth`` arrays and objects nest, so no input can exhaust
/// the stack. Values not asked for are skipped (``skip(depth:)``), but checked just as strictly.
///
/// Objects and arrays are read through callbacks, each positioned on a value that it must read or skip. Callers
/// pass the depth of the array or object they read: the document's is 0, that of a value in it 1, and so on.
///
/// **Thread safety:** value type over borrowed bytes; used within the scope that lends them.
struct StrictJSONReader {
    /// Where and why a document is not JSON.
    struct SyntaxError: Error, Equatable {
        /// The mistakes a caller may word its own way; every other one is `grammar`.
        enum Kind: Equatable {
            case grammar
            /// A member with the name (decoded) of an earlier member of its object.
            case duplicate(name: String)
            /// An array or object inside ``StrictJSONReader/maxDepth`` others.
            case tooDeep
        }

        let kind: Kind
        /// What is wrong, for a message: `expected ":" after the member name, got "8"`.
        let reason: String
        /// The offset in the document of the byte at fault (a byte order mark counts).
        let offset: Int
    }

    /// A string as it is in the document (a member's name, usually): its bytes between the quotes, and whether they
    /// hold an escape.
    struct Name {
        fileprivate let range: Range<Int>
        fileprivate let escaped: Bool
    }

    /// What the next value is.
    enum Kind {
        case object, array, string, number, literal
    }

    /// Arrays and objects nested deeper than this are refused.
    static let maxDepth = 64

    private let bytes: UnsafeBufferPointer<UInt8>
    private var position = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { position = 3 }
    }

    // MARK: Documents, objects and arrays

    /// Reads the document, an object: `member` is called with each member's name, positioned on its value, and must
    /// read it (``string()``, ``number()``, ``elements(depth:syntax:_:)``, ``members(depth:syntax:_:)``) or
    /// ``skip(depth:)`` it. Throws `notObject` when the document is JSON but not an object.
    mutating func document<Failure: Error>(
        notObject: Failure,
        syntax: (SyntaxError) -> Failure,
        _ member: (inout StrictJSONReader, Name) throws(Failure) -> Void
    ) throws(Failure) {
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

    /// Checks that nothing but whitespace is left.
    mutating func end() throws(SyntaxError) {
        skipWhitespace()
        guard position == bytes.count else { throw error("unexpected \(current()) after the document") }
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

    /// Reads the object at the cursor, at `depth`, calling `member` for each member (as
    /// ``document(notObject:syntax:_:)`` does). A member named like an earlier one is a `duplicate` error.
    mutating func members<Failure: Error>(
        depth: Int,
        syntax: (SyntaxError) -> Failure,
        _ member: (inout StrictJSONReader, Name) throws(Failure) -> Void
    ) throws(Failure) {
        var names = MemberNames()
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

    /// Reads the array at the cursor, at `depth`, calling `element` positioned on each element, which must read or
    /// skip it.
    mutating func elements<Failure: Error>(
        depth: Int,
        syntax: (SyntaxError) -> Failure,
        _ element: (inout StrictJSONReader) throws(Failure) -> Void
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
    private mutating func nextMember(depth: Int, step: inout Step, names: inout MemberNames) throws(SyntaxError)
        -> Name?
    {
        guard try next(closer: UInt8(ascii: "}"), depth: depth, step: &step) else { return nil }
        guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else {
            throw expected("a member name in double quotes")
        }
        let nameStart = position
        let name = try scanString()
        guard insert(name, into: &names) else {
            let text = text(name)
            throw SyntaxError(
                kind: .duplicate(name: text),
                reason: "duplicate key \(ConfigJSON.quote(text))",
                offset: nameStart
            )
        }
        skipWhitespace()
        guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else {
            throw expected("\":\" after the member name")
        }
        position += 1
        skipWhitespace()
        return name
    }

    /// Whether the cursor is on another element (after `[` or `,`); false after the closing `]`.
    private mutating func nextElement(depth: Int, step: inout Step) throws(SyntaxError) -> Bool {
        try next(closer: UInt8(ascii: "]"), depth: depth, step: &step)
    }

    /// Steps into the object or array at the cursor (at `depth`) on the first step, or over the `,` after a member or
    /// element on the others: whether another member or element follows (a `closer` right after a `,` is a trailing
    /// comma); false after `closer`, stepped over.
    @inline(__always)
    private mutating func next(closer: UInt8, depth: Int, step: inout Step) throws(SyntaxError) -> Bool {
        skipWhitespace()
        if step == .first {
            try enter(depth: depth)  // { or [
            step = .next
            skipWhitespace()
            guard position < bytes.count, bytes[position] == closer else { return true }
            position += 1
            return false
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: ",") {
            position += 1
            skipWhitespace()
            if position < bytes.count, bytes[position] == closer {
                throw error(closer == UInt8(ascii: "}") ? "trailing comma before \"}\"" : "trailing comma before \"]\"")
            }
            return true
        }
        guard position < bytes.count, bytes[position] == closer else {
            throw expected(closer == UInt8(ascii: "}") ? "\",\" or \"}\"" : "\",\" or \"]\"")
        }
        position += 1
        return false
    }

    /// Steps into the array or object at the cursor, which is at `depth`: the one depth limit.
    @inline(__always)
    private mutating func enter(depth: Int) throws(SyntaxError) {
        guard depth < Self.maxDepth else {
            throw SyntaxError(kind: .tooDeep, reason: "nesting deeper than \(Self.maxDepth) levels", offset: position)
        }
        position += 1
    }

    // MARK: Names

    /// Whether `name` is `expected` (compared byte for byte, or decoded when the name holds an escape).
    func name(_ name: Name, is expected: StaticString) -> Bool {
        let literal = UnsafeBufferPointer(start: expected.utf8Start, count: expected.utf8CodeUnitCount)
        if !name.escaped { return equal(name.range, literal) }
        return Array(text(name).utf8).elementsEqual(literal)
    }

    /// The name (or any string the reader stepped over), decoded.
    func text(_ name: Name) -> String {
        let raw = UnsafeBufferPointer(rebasing: bytes[name.range])
        guard name.escaped else { return String(decoding: raw, as: UTF8.self) }  // checked by scanString()
        var scalars = String.UnicodeScalarView()
        var cursor = self
        cursor.position = name.range.lowerBound
        var runStart = cursor.position
        while cursor.position < name.range.upperBound {
            guard bytes[cursor.position] == UInt8(ascii: "\\") else {
                cursor.position += 1
                continue
            }
            scalars.append(
                contentsOf: String(decoding: bytes[runStart..<cursor.position], as: UTF8.self).unicodeScalars
            )
            cursor.position += 1
            scalars.append((try? cursor.escape()) ?? "\u{FFFD}")  // checked by scanString(): never the replacement
            runStart = cursor.position
        }
        scalars.append(contentsOf: String(decoding: bytes[runStart..<cursor.position], as: UTF8.self).unicodeScalars)
        return String(scalars)
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

    /// Whether two names are the same string: the same Unicode scalars once unescaped (RFC 8259 §8.3). Not `String`'s
    /// `==`, which also takes canonically equivalent names (`é` and `e` + U+0301) for the same.
    private func same(_ left: Name, _ right: Name) -> Bool {
        if !left.escaped && !right.escaped {
            return equal(left.range, UnsafeBufferPointer(rebasing: bytes[right.range]))
        }
        return text(left).utf8.elementsEqual(text(right).utf8)
    }

    /// The names of one object's members so far, for the duplicate check. The first few are compared in place
    /// (the objects of a token, and most others, never hold more); past ``inPlaceLimit`` their decoded texts go
    /// into a set, so that an object of n members costs O(n), not n²/2 comparisons: a publish body's `data` is
    /// whatever a client sends (95,000 members in its 1 MiB took 6.5 s of CPU with comparisons alone).
    private struct MemberNames {
        static var inPlaceLimit: Int { 16 }

        /// The names, while there are at most ``inPlaceLimit`` (`texts` is `nil` until then).
        var names: [Name] = []
        /// The decoded names as UTF-8 (compared as ``same(_:_:)`` compares), once there are more.
        var texts: Set<[UInt8]>?

        /// How many members the object has had so far.
        var count: Int { texts?.count ?? names.count }
    }

    /// Adds `name` to `names`; false (and `names` unchanged) if the object already has a member of that name.
    @inline(__always)
    private func insert(_ name: Name, into names: inout MemberNames) -> Bool {
        if names.texts == nil {
            guard names.names.count == MemberNames.inPlaceLimit else {
                for other in names.names where same(other, name) { return false }
                if names.names.isEmpty { names.names.reserveCapacity(8) }
                names.names.append(name)
                return true
            }
            names.texts = Set(names.names.map { Array(text($0).utf8) })
            names.names = []
        }
        return names.texts?.insert(Array(text(name).utf8)).inserted == true
    }

    // MARK: Values

    /// Skips (and checks) the value at the cursor, which is at `depth`.
    mutating func skip(depth: Int) throws(SyntaxError) {
        var nothing: [UInt8]? = nil
        try walk(depth: depth, copyingTo: &nothing)
    }

    /// The value at the cursor, which is at `depth`, checked and copied without insignificant whitespace: strings
    /// (escapes included) and numbers as written.
    mutating func copyCompact(depth: Int) throws(SyntaxError) -> [UInt8] {
        var copy: [UInt8]? = []
        try walk(depth: depth, copyingTo: &copy)
        return copy ?? []
    }

    /// Reads the value at the cursor, which is at `depth`, appending it compactly to `out` when there is one.
    private mutating func walk(depth: Int, copyingTo out: inout [UInt8]?) throws(SyntaxError) {
        switch peek() {
        case .object:
            out?.append(UInt8(ascii: "{"))
            var names = MemberNames()
            var step = Step.first
            while let name = try nextMember(depth: depth, step: &step, names: &names) {
                if names.count > 1 { out?.append(UInt8(ascii: ",")) }
                out?.append(contentsOf: bytes[(name.range.lowerBound - 1)...name.range.upperBound])
                out?.append(UInt8(ascii: ":"))
                try walk(depth: depth + 1, copyingTo: &out)
            }
            out?.append(UInt8(ascii: "}"))
        case .array:
            out?.append(UInt8(ascii: "["))
            var step = Step.first
            var first = true
            while try nextElement(depth: depth, step: &step) {
                if !first { out?.append(UInt8(ascii: ",")) }
                first = false
                try walk(depth: depth + 1, copyingTo: &out)
            }
            out?.append(UInt8(ascii: "]"))
        case .string:
            let start = position
            _ = try scanString()
            out?.append(contentsOf: bytes[start..<position])
        case .number:
            let range = try scanNumber()
            out?.append(contentsOf: bytes[range])
        case .literal, nil:
            let start = position
            _ = try literal()
            out?.append(contentsOf: bytes[start..<position])
        }
    }

    /// The literal at the cursor: `true`, `false`, or `nil` for `null`. Anything else is `expected a value`.
    mutating func literal() throws(SyntaxError) -> Bool? {
        skipWhitespace()
        let word: StaticString
        let value: Bool?
        switch position < bytes.count ? bytes[position] : 0 {
        case UInt8(ascii: "t"): (word, value) = ("true", true)
        case UInt8(ascii: "f"): (word, value) = ("false", false)
        case UInt8(ascii: "n"): (word, value) = ("null", nil)
        default: throw expected("a value")
        }
        let letters = UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount)
        guard bytes[position...].starts(with: letters) else { throw expected("a value") }
        position += letters.count
        return value
    }

    /// The string at the cursor, decoded.
    mutating func string() throws(SyntaxError) -> String {
        guard peek() == .string else { throw expected("a string") }
        return text(try scanString())
    }

    /// Steps over the string at the cursor (on its `"`), checking its escapes, control characters and UTF-8.
    private mutating func scanString() throws(SyntaxError) -> Name {
        let quote = position
        let start = position + 1
        var escaped = false
        var index = start
        while true {
            // A run of bytes as they are, up to an escape or the closing quote; checked as UTF-8 unless all ASCII.
            let runStart = index
            var bits: UInt8 = 0
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { break }
                if byte < 0x20 {
                    position = index
                    throw error("a control character inside a string (escape it)")
                }
                bits |= byte
                index += 1
            }
            guard index < bytes.count else { throw error("a string that never ends", at: quote) }
            if bits >= 0x80, String(validating: bytes[runStart..<index], as: UTF8.self) == nil {
                throw error("a string that is not valid UTF-8", at: runStart)
            }
            position = index + 1
            if bytes[index] == UInt8(ascii: "\"") { return Name(range: start..<index, escaped: escaped) }
            escaped = true
            _ = try escape()
            index = position
        }
    }

    /// The escape at the cursor, just after its backslash (`n`, `u00e9`, a surrogate pair), read past.
    private mutating func escape() throws(SyntaxError) -> Unicode.Scalar {
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
                guard position + 1 < bytes.count, bytes[position] == UInt8(ascii: "\\"),
                    bytes[position + 1] == UInt8(ascii: "u")
                else { throw loneSurrogate(high) }
                position += 2
                let low = try hex4()
                guard (0xDC00..<0xE000).contains(low) else { throw loneSurrogate(high) }
                return Unicode.Scalar(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))!
            }
            guard let scalar = Unicode.Scalar(high) else { throw loneSurrogate(high) }
            return scalar
        default:
            position -= 1
            throw error("an unknown escape \\\(current())")
        }
    }

    /// The four hex digits of a `\u` escape at the cursor, read past.
    private mutating func hex4() throws(SyntaxError) -> UInt32 {
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

    private static func hexValue(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
        default: nil
        }
    }

    /// The number at the cursor.
    mutating func number() throws(SyntaxError) -> Double {
        guard peek() == .number else { throw expected("a number") }
        let range = try scanNumber()
        let negative = bytes[range.lowerBound] == UInt8(ascii: "-")
        var index = negative ? range.lowerBound + 1 : range.lowerBound
        if range.upperBound - index <= 15 {
            // An integer of at most 15 digits (every NumericDate until the year 33 658) is exact in a Double.
            var value: Int64 = 0
            while index < range.upperBound, case let digit = bytes[index] &- UInt8(ascii: "0"), digit < 10 {
                value = value * 10 + Int64(digit)
                index += 1
            }
            if index == range.upperBound { return negative ? -Double(value) : Double(value) }
        }
        return Double(String(decoding: bytes[range], as: UTF8.self)) ?? .nan
    }

    /// The number at the cursor as written (so `80` and `80.0` can be told apart).
    mutating func numberText() throws(SyntaxError) -> String {
        guard peek() == .number else { throw expected("a number") }
        return String(decoding: bytes[try scanNumber()], as: UTF8.self)
    }

    /// Steps over the number at the cursor (on its `-` or first digit), checking it against RFC 8259's grammar:
    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
    private mutating func scanNumber() throws(SyntaxError) -> Range<Int> {
        let start = position
        if bytes[position] == UInt8(ascii: "-") { position += 1 }
        let integerStart = position
        let integerDigits = skipDigits()
        guard integerDigits > 0 else { throw error("a number needs digits after \"-\"") }
        guard integerDigits == 1 || bytes[integerStart] != UInt8(ascii: "0") else {
            throw error("a number with a leading zero", at: integerStart)
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            position += 1
            guard skipDigits() > 0 else { throw error("a number needs digits after \".\"") }
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E") {
            position += 1
            if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") {
                position += 1
            }
            guard skipDigits() > 0 else { throw error("a number needs digits in its exponent") }
        }
        return start..<position
    }

    /// Steps over decimal digits; how many.
    private mutating func skipDigits() -> Int {
        let from = position
        while position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) {
            position += 1
        }
        return position - from
    }

    private mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    // MARK: Errors

    /// A grammar error at `offset` (the cursor's, unless given).
    private func error(_ reason: String, at offset: Int? = nil) -> SyntaxError {
        SyntaxError(kind: .grammar, reason: reason, offset: offset ?? position)
    }

    /// `expected <what>, got <the byte at the cursor>`, built out of line (the readers of a JWT are hot, their errors
    /// are not).
    @inline(never)
    private func expected(_ what: StaticString) -> SyntaxError {
        error("expected \(what), got \(current())")
    }

    private func loneSurrogate(_ unit: UInt32) -> SyntaxError {
        error("a lone surrogate \\u\(String(unit, radix: 16))")
    }

    /// The byte at the cursor, for a message: `"x"`, `byte 0x7f`, or `end of file`.
    private func current() -> String {
        guard position < bytes.count else { return "end of file" }
        let byte = bytes[position]
        if byte >= 0x21 && byte < 0x7F { return "\"\(Character(Unicode.Scalar(byte)))\"" }
        return "byte 0x\(String(byte, radix: 16))"
    }
}
