/// The syntax of a `Host` field value: `uri-host [ ":" port ]` (RFC 9110 §7.2), where `uri-host` is RFC 3986
/// §3.2.2's `host`.
///
/// ```
/// host        = IP-literal / IPv4address / reg-name
/// IP-literal  = "[" ( IPv6address / IPvFuture ) "]"
/// IPvFuture   = "v" 1*HEXDIG "." 1*( unreserved / sub-delims / ":" )
/// reg-name    = *( unreserved / pct-encoded / sub-delims )
/// port        = *DIGIT
/// ```
///
/// Stricter than the grammar in two places, both because no client can mean them for an `http` URI:
/// the host must not be empty (RFC 9110 §4.2.1: a recipient must reject an `http` URI with an empty host) and
/// the port, when it has digits, must be at most 65535. An empty port (`example.com:`) is allowed, as RFC 3986
/// §3.2.3 allows it. IPv6 zone identifiers (RFC 6874) are not accepted. An `IPv4address` is also a
/// `reg-name`, so dotted numbers are checked only as names.
///
/// Whether an *empty* field value is acceptable depends on the request-target, so the caller decides that.
///
/// **Ownership:** Stateless namespace.
/// **Thread safety:** Value type; not shared.
enum HostField {
    /// Whether `value` (a non-empty, trimmed field value) is `uri-host [ ":" port ]` with a non-empty host.
    static func isValid(_ value: UnsafeBufferPointer<UInt8>) -> Bool {
        guard !value.isEmpty else { return false }
        let hostEnd: Int
        if value[0] == ASCII.openBracket {
            guard let close = ASCII.firstIndex(of: ASCII.closeBracket, in: value, from: 1),
                isIPLiteralContent(UnsafeBufferPointer(rebasing: value[1..<close]))
            else {
                return false
            }
            hostEnd = close &+ 1
        } else {
            var index = 0
            while index < value.count && value[index] != ASCII.colon {
                index &+= 1
            }
            guard index > 0, isRegName(UnsafeBufferPointer(rebasing: value[0..<index])) else {
                return false
            }
            hostEnd = index
        }
        if hostEnd == value.count {
            return true
        }
        guard value[hostEnd] == ASCII.colon else {
            return false
        }
        return isPort(UnsafeBufferPointer(rebasing: value[(hostEnd &+ 1)...]))
    }

    /// `*DIGIT`, at most 65535 when not empty.
    private static func isPort(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var port = 0
        for byte in bytes {
            guard byte &- 0x30 < 10 else { return false }
            port = port &* 10 &+ Int(byte &- 0x30)
            if port > 65_535 { return false }
        }
        return true
    }

    /// `*( unreserved / pct-encoded / sub-delims )`.
    private static func isRegName(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == ASCII.percent {
                guard index &+ 2 < bytes.count, ASCII.hexValue(bytes[index &+ 1]) != nil,
                    ASCII.hexValue(bytes[index &+ 2]) != nil
                else {
                    return false
                }
                index &+= 3
                continue
            }
            guard isUnreserved(byte) || isSubDelimiter(byte) else { return false }
            index &+= 1
        }
        return true
    }

    /// What sits between `[` and `]`: an `IPv6address` or an `IPvFuture`.
    private static func isIPLiteralContent(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let first = bytes.first else { return false }
        if first == 0x76 || first == 0x56 {  // "v" / "V"
            return isIPvFuture(bytes)
        }
        return isIPv6Address(bytes)
    }

    /// `"v" 1*HEXDIG "." 1*( unreserved / sub-delims / ":" )`.
    private static func isIPvFuture(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var index = 1
        while index < bytes.count && ASCII.hexValue(bytes[index]) != nil {
            index &+= 1
        }
        guard index > 1, index < bytes.count, bytes[index] == ASCII.dot, index &+ 1 < bytes.count else {
            return false
        }
        for byte in bytes[(index &+ 1)...] {
            guard isUnreserved(byte) || isSubDelimiter(byte) || byte == ASCII.colon else { return false }
        }
        return true
    }

    /// RFC 3986's `IPv6address`: eight 16-bit groups of 1 to 4 hex digits separated by `:`, at most one `::`
    /// standing for one or more zero groups, and optionally a dotted IPv4 address as the last two groups.
    private static func isIPv6Address(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let count = bytes.count
        var index = 0
        var groups = 0
        var compressed = false
        if count >= 2 && bytes[0] == ASCII.colon && bytes[1] == ASCII.colon {
            compressed = true
            index = 2
        }
        while index < count {
            let start = index
            while index < count && index &- start < 5 && ASCII.hexValue(bytes[index]) != nil {
                index &+= 1
            }
            if index < count && bytes[index] == ASCII.dot {
                // The rest is an IPv4 address, counting as two groups.
                guard isIPv4Address(UnsafeBufferPointer(rebasing: bytes[start...])) else { return false }
                groups &+= 2
                index = count
                break
            }
            let digits = index &- start
            guard digits >= 1 && digits <= 4 else { return false }
            groups &+= 1
            if index == count { break }
            guard bytes[index] == ASCII.colon else { return false }
            index &+= 1
            if index < count && bytes[index] == ASCII.colon {
                guard !compressed else { return false }
                compressed = true
                index &+= 1
            } else if index == count {
                return false  // a single trailing colon
            }
        }
        return compressed ? groups <= 7 : groups == 8
    }

    /// `dec-octet "." dec-octet "." dec-octet "." dec-octet`, each octet 0-255 without leading zeros.
    private static func isIPv4Address(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var octets = 0
        var index = 0
        while true {
            let start = index
            var value = 0
            while index < bytes.count && bytes[index] &- 0x30 < 10 && index &- start < 3 {
                value = value &* 10 &+ Int(bytes[index] &- 0x30)
                index &+= 1
            }
            let digits = index &- start
            guard digits >= 1, value <= 255, digits == 1 || bytes[start] != 0x30 else { return false }
            octets &+= 1
            if octets == 4 { return index == bytes.count }
            guard index < bytes.count, bytes[index] == ASCII.dot else { return false }
            index &+= 1
        }
    }

    /// `ALPHA / DIGIT / "-" / "." / "_" / "~"`.
    @inline(__always)
    private static func isUnreserved(_ byte: UInt8) -> Bool {
        (byte | 0x20) &- 0x61 < 26 || byte &- 0x30 < 10 || byte == 0x2D || byte == ASCII.dot || byte == 0x5F
            || byte == 0x7E
    }

    /// `"!" / "$" / "&" / "'" / "(" / ")" / "*" / "+" / "," / ";" / "="`.
    @inline(__always)
    private static func isSubDelimiter(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x21, 0x24, 0x26, 0x27, 0x28, 0x29, 0x2A, 0x2B, 0x2C, 0x3B, 0x3D:
            return true
        default:
            return false
        }
    }
}

extension ASCII {
    static let dot: UInt8 = 0x2E
    static let openBracket: UInt8 = 0x5B
    static let closeBracket: UInt8 = 0x5D
}
