/// Which query parameters the request log does not write the values of (`log.redactQueryParameters`):
/// `?userId=1&token=abc` is logged as `userId=1&token=REDACTED`.
///
/// Names are compared ignoring ASCII case and after percent-decoding, so `%74oken=` and `TOKEN=` are redacted
/// too. A parameter written several times is redacted each time.
///
/// **Thread safety:** value type; not shared.
struct QueryRedaction: Sendable, Equatable {
    /// The lowercased names, as bytes.
    private let names: [[UInt8]]

    /// Redacts nothing.
    static let none = QueryRedaction([])

    /// Redacts the values of `names` (compared ignoring ASCII case).
    init(_ names: [String]) {
        self.names = names.map { Array($0.lowercased().utf8) }
    }

    /// What replaces a redacted value.
    static let marker = "REDACTED"

    /// Appends `query`, redacted and cut to `maxBytes` (with `…`), as a JSON string.
    func appendQuery(_ query: String, maxBytes: Int, to bytes: inout [UInt8]) {
        guard redacts(query) else {
            RequestLogEntry.appendClipped(query, maxBytes: maxBytes, to: &bytes)
            return
        }
        var redacted = ""
        var first = true
        for pair in query.split(separator: "&", omittingEmptySubsequences: false) {
            if !first { redacted += "&" }
            first = false
            // A bare name (no `=`) has no value to hide.
            if let equals = pair.firstIndex(of: "="), isRedacted(pair[..<equals]) {
                redacted += pair[...equals] + Self.marker
            } else {
                redacted += pair
            }
        }
        RequestLogEntry.appendClipped(redacted, maxBytes: maxBytes, to: &bytes)
    }

    /// Whether ``appendQuery(_:maxBytes:to:)`` hides any value of `query`.
    func redacts(_ query: String) -> Bool {
        !names.isEmpty && needsRedaction(query)
    }

    /// Whether any parameter of `query` is redacted. The common answer, no, is found on the query's bytes in
    /// one pass, without allocating.
    private func needsRedaction(_ query: String) -> Bool {
        var query = query
        return query.withUTF8 { bytes in
            var start = 0
            while start < bytes.count {
                var end = start
                while end < bytes.count && bytes[end] != UInt8(ascii: "&") { end += 1 }
                var nameEnd = start
                while nameEnd < end && bytes[nameEnd] != UInt8(ascii: "=") { nameEnd += 1 }
                if isRedacted(UnsafeBufferPointer(rebasing: bytes[start..<nameEnd])) { return true }
                start = end + 1
            }
            return false
        }
    }

    private func isRedacted(_ name: Substring) -> Bool {
        var name = String(name)
        return name.withUTF8 { isRedacted($0) }
    }

    private func isRedacted(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
        if name.contains(UInt8(ascii: "%")) || name.contains(UInt8(ascii: "+")) {
            let decoded = Self.percentDecoded(name)
            return decoded.withUnsafeBufferPointer { matches($0) }
        }
        return matches(name)
    }

    private func matches(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
        names.contains { wanted in
            wanted.count == name.count && zip(wanted, name).allSatisfy { $0 == Self.lowercase($1) }
        }
    }

    private static func lowercase(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 : byte
    }

    /// The bytes of `name` with `%XX` decoded and `+` read as a space.
    private static func percentDecoded(_ utf8: UnsafeBufferPointer<UInt8>) -> [UInt8] {
        var result: [UInt8] = []
        var index = 0
        while index < utf8.count {
            let byte = utf8[index]
            if byte == UInt8(ascii: "%"), index + 2 < utf8.count, let high = hexValue(utf8[index + 1]),
                let low = hexValue(utf8[index + 2])
            {
                result.append(high << 4 | low)
                index += 3
            } else {
                result.append(byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
                index += 1
            }
        }
        return result
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
