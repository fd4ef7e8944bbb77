import Synchronization

/// A parsed `traceparent` header (W3C Trace Context §3.2).
///
/// `version "-" trace-id "-" parent-id "-" trace-flags`, lowercase hex: version `00` is exactly 55 characters;
/// a later version may be longer, and then the 56th character must be `-`; version `ff` is invalid; an
/// all-zero trace ID or parent ID is invalid. Anything else fails and the request starts a new trace.
///
/// **Thread safety:** value type; not shared.
struct TraceParent: Equatable {
    var version: UInt8
    var traceID: (high: UInt64, low: UInt64)
    var parentID: UInt64
    var flags: UInt8

    static func == (lhs: TraceParent, rhs: TraceParent) -> Bool {
        lhs.version == rhs.version && lhs.traceID == rhs.traceID && lhs.parentID == rhs.parentID
            && lhs.flags == rhs.flags
    }

    init?(_ text: String) {
        var text = text
        let parsed: TraceParent? = text.withUTF8 { bytes in
            guard bytes.count >= 55 else { return nil }
            guard let version = Hex.parse(bytes, 0, digits: 2), version != 0xFF else { return nil }
            if version == 0 && bytes.count != 55 { return nil }
            if bytes.count > 55 && bytes[55] != UInt8(ascii: "-") { return nil }
            guard bytes[2] == UInt8(ascii: "-"), bytes[35] == UInt8(ascii: "-"), bytes[52] == UInt8(ascii: "-"),
                let high = Hex.parse(bytes, 3, digits: 16), let low = Hex.parse(bytes, 19, digits: 16),
                let parent = Hex.parse(bytes, 36, digits: 16), let flags = Hex.parse(bytes, 53, digits: 2),
                high | low != 0, parent != 0
            else { return nil }
            return TraceParent(version: UInt8(version), traceID: (high, low), parentID: parent, flags: UInt8(flags))
        }
        guard let parsed else { return nil }
        self = parsed
    }

    private init(version: UInt8, traceID: (high: UInt64, low: UInt64), parentID: UInt64, flags: UInt8) {
        self.version = version
        self.traceID = traceID
        self.parentID = parentID
        self.flags = flags
    }
}
