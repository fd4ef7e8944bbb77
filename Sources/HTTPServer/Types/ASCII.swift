// Byte classes and case folding shared by the types and the parser. Kept free of Foundation so the fuzz target
// can compile these sources on their own.

/// Byte-level helpers for HTTP's ASCII grammar.
///
/// **Ownership:** Stateless namespace.
/// **Thread safety:** Value type; not shared.
enum ASCII {
    static let space: UInt8 = 0x20
    static let tab: UInt8 = 0x09
    static let cr: UInt8 = 0x0D
    static let lf: UInt8 = 0x0A
    static let colon: UInt8 = 0x3A
    static let comma: UInt8 = 0x2C
    static let semicolon: UInt8 = 0x3B
    static let questionMark: UInt8 = 0x3F
    static let slash: UInt8 = 0x2F
    static let asterisk: UInt8 = 0x2A
    static let percent: UInt8 = 0x25
    static let plus: UInt8 = 0x2B
    static let ampersand: UInt8 = 0x26
    static let equals: UInt8 = 0x3D

    /// Bit `c` set for every `tchar` below 64 (RFC 9110 §5.6.2).
    private static let tokenMaskLow: UInt64 = 0x03FF_6CFA_0000_0000
    /// Bit `c - 64` set for every `tchar` from 64 to 127.
    private static let tokenMaskHigh: UInt64 = 0x57FF_FFFF_C7FF_FFFE

    /// Whether `c` may appear in a token (method, header name, transfer coding).
    @inline(__always)
    static func isTokenChar(_ c: UInt8) -> Bool {
        if c < 64 {
            return tokenMaskLow & (1 &<< UInt64(c)) != 0
        }
        if c < 128 {
            return tokenMaskHigh & (1 &<< UInt64(c &- 64)) != 0
        }
        return false
    }

    /// Whether `c` may appear in a field value: HTAB, visible ASCII, SP, or obs-text (0x80-0xFF).
    @inline(__always)
    static func isFieldValueChar(_ c: UInt8) -> Bool {
        c >= 0x20 ? c != 0x7F : c == tab
    }

    /// Whether `c` may appear in a request-target: visible ASCII only.
    @inline(__always)
    static func isTargetChar(_ c: UInt8) -> Bool {
        c &- 0x21 < 0x5E
    }

    /// Whether `c` is optional whitespace (SP or HTAB).
    @inline(__always)
    static func isWhitespace(_ c: UInt8) -> Bool {
        c == space || c == tab
    }

    /// `c` with `A`-`Z` mapped to `a`-`z`; every other byte unchanged.
    @inline(__always)
    static func lowercased(_ c: UInt8) -> UInt8 {
        c &- 0x41 < 26 ? c | 0x20 : c
    }

    /// The value of a hexadecimal digit, or nil.
    @inline(__always)
    static func hexValue(_ c: UInt8) -> UInt8? {
        if c &- 0x30 < 10 { return c &- 0x30 }
        let folded = c | 0x20
        if folded &- 0x61 < 6 { return folded &- 0x61 &+ 10 }
        return nil
    }

    /// Compares two byte buffers, ignoring ASCII case.
    @inline(__always)
    static func caseInsensitiveEquals(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        for i in 0..<a.count where lowercased(a[i]) != lowercased(b[i]) {
            return false
        }
        return true
    }

    /// Compares two strings over their UTF-8 bytes, ignoring ASCII case. Does not allocate for native strings.
    static func caseInsensitiveEquals(_ a: String, _ b: String) -> Bool {
        let lhs = a.utf8
        let rhs = b.utf8
        guard lhs.count == rhs.count else { return false }
        let fast = lhs.withContiguousStorageIfAvailable { l in
            rhs.withContiguousStorageIfAvailable { r in caseInsensitiveEquals(l, r) }
        }
        if let fast, let result = fast {
            return result
        }
        return lhs.elementsEqual(rhs) { lowercased($0) == lowercased($1) }
    }

    /// Compares a string with lowercase ASCII `lowercaseLiteral`, ignoring case on the string's side only.
    static func caseInsensitiveEquals(_ bytes: UnsafeBufferPointer<UInt8>, lowercaseLiteral: StaticString) -> Bool {
        guard bytes.count == lowercaseLiteral.utf8CodeUnitCount else { return false }
        let literal = UnsafeBufferPointer(start: lowercaseLiteral.utf8Start, count: lowercaseLiteral.utf8CodeUnitCount)
        for i in 0..<bytes.count where lowercased(bytes[i]) != literal[i] {
            return false
        }
        return true
    }
}
