/// The number grammars of RESP lines, read straight from bytes with checked arithmetic.
enum RESPNumbers {
    /// `[+-]digits` as a signed 64-bit integer; nil when malformed or out of range.
    static func integer(_ text: UnsafeBufferPointer<UInt8>) -> Int64? {
        var index = 0
        let negative = skipSign(text, &index)
        guard index < text.count else { return nil }
        // Accumulated as a negative number, which reaches Int64.min.
        var value: Int64 = 0
        while index < text.count {
            let digit = text[index] &- 0x30
            guard digit < 10 else { return nil }
            let (shifted, o1) = value.multipliedReportingOverflow(by: 10)
            let (sum, o2) = shifted.subtractingReportingOverflow(Int64(digit))
            guard !o1, !o2 else { return nil }
            value = sum
            index &+= 1
        }
        if negative {
            return value
        }
        let (positive, overflow) = Int64(0).subtractingReportingOverflow(value)
        return overflow ? nil : positive
    }

    /// A length or count: decimal digits, or `-1` for a null; nil for anything else or a number beyond `Int`.
    static func length(_ text: UnsafeBufferPointer<UInt8>) -> Int? {
        if text.count == 2, text[0] == UInt8(ascii: "-"), text[1] == UInt8(ascii: "1") {
            return -1
        }
        return decimal(text)
    }

    /// One or more decimal digits (no sign) that fit in `Int`; nil for anything else.
    static func decimal(_ text: some Collection<UInt8>) -> Int? {
        guard !text.isEmpty else { return nil }
        var value = 0
        for byte in text {
            let digit = byte &- 0x30
            guard digit < 10 else { return nil }
            let (shifted, o1) = value.multipliedReportingOverflow(by: 10)
            let (sum, o2) = shifted.addingReportingOverflow(Int(digit))
            guard !o1, !o2 else { return nil }
            value = sum
        }
        return value
    }

    /// `[+-]digits`, at least one digit.
    static func isBigNumber(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
        var index = 0
        _ = skipSign(text, &index)
        guard index < text.count else { return false }
        while index < text.count {
            guard text[index] &- 0x30 < 10 else { return false }
            index &+= 1
        }
        return true
    }

    /// RESP3's double: `[+-](inf|nan)` or `[+-]digits[.digits][(e|E)[+-]digits]`; nil for anything else.
    ///
    /// The grammar is checked here so that `Double.init` never sees the other forms it would accept (hexadecimal,
    /// `infinity`, `nan(…)`).
    static func double(_ text: UnsafeBufferPointer<UInt8>) -> Double? {
        var index = 0
        let negative = skipSign(text, &index)
        let rest = UnsafeBufferPointer(rebasing: text[index...])
        if equals(rest, "inf") {
            return negative ? -.infinity : .infinity
        }
        if equals(rest, "nan") {
            return .nan
        }
        guard skipDigits(text, &index) else { return nil }
        if index < text.count, text[index] == UInt8(ascii: ".") {
            index &+= 1
            guard skipDigits(text, &index) else { return nil }
        }
        if index < text.count, text[index] | 0x20 == UInt8(ascii: "e") {
            index &+= 1
            if index < text.count, text[index] == UInt8(ascii: "-") || text[index] == UInt8(ascii: "+") {
                index &+= 1
            }
            guard skipDigits(text, &index) else { return nil }
        }
        guard index == text.count else { return nil }
        return Double(String(decoding: text, as: UTF8.self))
    }

    /// Advances past a leading `+` or `-`, if there is one; true for `-`.
    private static func skipSign(_ text: UnsafeBufferPointer<UInt8>, _ index: inout Int) -> Bool {
        guard let first = text.first, first == UInt8(ascii: "-") || first == UInt8(ascii: "+") else { return false }
        index = 1
        return first == UInt8(ascii: "-")
    }

    /// Advances past one or more digits; false when there is none.
    private static func skipDigits(_ text: UnsafeBufferPointer<UInt8>, _ index: inout Int) -> Bool {
        let start = index
        while index < text.count && text[index] &- 0x30 < 10 {
            index &+= 1
        }
        return index > start
    }

    private static func equals(_ bytes: UnsafeBufferPointer<UInt8>, _ literal: StaticString) -> Bool {
        guard bytes.count == literal.utf8CodeUnitCount else { return false }
        let start = literal.utf8Start
        for index in 0..<bytes.count where bytes[index] != start[index] {
            return false
        }
        return true
    }
}
