import Dispatch
import Foundation
import Reactive

/// One finished request, as written to the structured request log.
///
/// **Thread safety:** value type; not shared.
struct RequestLogEntry: Sendable {
    var time: Date
    var method: String
    var path: String
    var status: Int
    var durationSeconds: Double
    var bytes: Int
    var events: Int?
    var end: StreamEnd?
    /// The raw query (without `?`), written with the values of ``redaction``'s parameters replaced.
    var query: String?
    /// The query parameters whose values are not written.
    var redaction = QueryRedaction.none
    /// The matched route's pattern, or `unmatched`.
    var route: String?
    /// The client's IP address as text.
    var remoteAddress: String?
    /// The `User-Agent` header.
    var userAgent: String?
    /// The request ID and trace context.
    var correlation: RequestCorrelation?
    /// Why the upstream failed, for a request answered with an upstream problem.
    var upstreamFailure: UpstreamFailureSummary?

    init(
        time: Date,
        method: String,
        path: String,
        status: Int,
        durationSeconds: Double,
        bytes: Int,
        events: Int? = nil,
        end: StreamEnd? = nil
    ) {
        self.time = time
        self.method = method
        self.path = path
        self.status = status
        self.durationSeconds = durationSeconds
        self.bytes = bytes
        self.events = events
        self.end = end
    }

    /// The longest query written; longer ones are cut and end with `…`.
    static let maxQueryBytes = 2048
    /// The longest `User-Agent` written; longer ones are cut and end with `…`.
    static let maxUserAgentBytes = 256

    /// The entry as one JSON object (no trailing newline):
    /// `{"time":"2026-12-02T18:30:00.123Z","level":"info","method":"GET","path":"/health","status":200,"duration_ms":0.041,"bytes":15}`,
    /// then, when known, `query`, `route`, `events`, `end`, `request_id`, `trace_id`, `remote`, `user_agent`
    /// and `upstream` (an object: `url`, `error`, `status`, `attempts`, `timeout_s`).
    var jsonBytes: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(256 + path.utf8.count + (query?.utf8.count ?? 0))
        appendJSON(to: &bytes)
        return bytes
    }

    /// Appends ``jsonBytes`` to `bytes` (a log sink's buffer, say).
    func appendJSON(to bytes: inout [UInt8]) {
        // Written straight into the buffer, field by field, as `JSONObjectWriter` would write them.
        Self.append(#"{"time":""#, to: &bytes)
        Self.appendISO8601(time, to: &bytes)
        Self.append(#"","level":"info","method":"#, to: &bytes)
        JSONText.appendString(method, to: &bytes)
        Self.append(#","path":"#, to: &bytes)
        JSONText.appendString(path, to: &bytes)
        if let query {
            Self.append(#","query":"#, to: &bytes)
            redaction.appendQuery(query, maxBytes: Self.maxQueryBytes, to: &bytes)
        }
        if let route {
            Self.append(#","route":"#, to: &bytes)
            Self.appendQuotedPlain(route, to: &bytes)
        }
        Self.append(#","status":"#, to: &bytes)
        JSONText.appendInteger(status, to: &bytes)
        Self.append(#","duration_ms":"#, to: &bytes)
        JSONText.appendDecimal(durationSeconds * 1000, fractionDigits: 3, to: &bytes)
        Self.append(#","bytes":"#, to: &bytes)
        JSONText.appendInteger(self.bytes, to: &bytes)
        if let events {
            Self.append(#","events":"#, to: &bytes)
            JSONText.appendInteger(events, to: &bytes)
        }
        if let end {
            Self.append(#","end":"#, to: &bytes)
            JSONText.appendString(end.rawValue, to: &bytes)
        }
        if let correlation {
            Self.append(#","request_id":"#, to: &bytes)
            Self.appendQuotedPlain(correlation.requestID, to: &bytes)
            Self.append(#","trace_id":""#, to: &bytes)
            correlation.appendTraceID(to: &bytes)
            bytes.append(UInt8(ascii: "\""))
        }
        if let remoteAddress {
            Self.append(#","remote":"#, to: &bytes)
            Self.appendQuotedPlain(remoteAddress, to: &bytes)
        }
        if let userAgent {
            Self.append(#","user_agent":"#, to: &bytes)
            Self.appendClipped(userAgent, maxBytes: Self.maxUserAgentBytes, to: &bytes)
        }
        if let upstreamFailure {
            Self.append(#","upstream":"#, to: &bytes)
            upstreamFailure.appendJSON(to: &bytes)
        }
        bytes.append(UInt8(ascii: "}"))
    }

    /// Appends `text` in quotes as it is when none of its bytes needs a JSON escape (request IDs, which are
    /// validated to a safe set; route patterns; IP addresses), in one copy; otherwise escaped.
    @inline(__always)
    static func appendQuotedPlain(_ text: String, to bytes: inout [UInt8]) {
        let copied: Bool? = text.utf8.withContiguousStorageIfAvailable { utf8 in
            guard utf8.allSatisfy({ $0 >= 0x20 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") && $0 != 0x7F })
            else {
                return false
            }
            bytes.append(UInt8(ascii: "\""))
            bytes.append(contentsOf: utf8)
            bytes.append(UInt8(ascii: "\""))
            return true
        }
        if copied != true { JSONText.appendString(text, to: &bytes) }
    }

    /// Appends `text` as a JSON string, cut to `maxBytes` (at a character boundary) with `…` when longer.
    static func appendClipped(_ text: String, maxBytes: Int, to bytes: inout [UInt8]) {
        if text.utf8.count <= maxBytes {
            JSONText.appendString(text, to: &bytes)
        } else {
            var end = text.utf8.index(text.utf8.startIndex, offsetBy: maxBytes)
            while end > text.startIndex, !text.unicodeScalars.indices.contains(end) {
                end = text.utf8.index(before: end)
            }
            JSONText.appendString(text[..<end] + "…", to: &bytes)
        }
    }

    /// Appends the bytes of a literal (no escaping: the literals here are valid JSON text).
    @inline(__always)
    private static func append(_ text: StaticString, to bytes: inout [UInt8]) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// `yyyy-MM-ddTHH:mm:ss.SSSZ` in UTC, computed by hand (no formatter on the request path).
    static func iso8601(_ date: Date) -> String {
        var bytes: [UInt8] = []
        appendISO8601(date, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends `date` as `yyyy-MM-ddTHH:mm:ss.SSSZ` in UTC (ASCII, no quotes) without building strings.
    static func appendISO8601(_ date: Date, to bytes: inout [UInt8]) {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        let (days, dayMilliseconds) = floorDivide(milliseconds, 86_400_000)
        // Civil-from-days (proleptic Gregorian), days since 1970-01-01.
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        let hour = dayMilliseconds / 3_600_000
        let minute = dayMilliseconds / 60_000 % 60
        let second = dayMilliseconds / 1000 % 60
        let millisecond = dayMilliseconds % 1000
        guard (0...9999).contains(year) else {
            // Outside years 0...9999, `String(value)` left-padded with zeros, as a formatter would write it.
            appendPadded(year, width: 4, to: &bytes)
            for (separator, value, width) in [
                ("-", month, 2), ("-", day, 2), ("T", hour, 2), (":", minute, 2), (":", second, 2),
                (".", millisecond, 3),
            ] as [(Unicode.Scalar, Int64, Int)] {
                bytes.append(UInt8(ascii: separator))
                appendPadded(value, width: width, to: &bytes)
            }
            bytes.append(UInt8(ascii: "Z"))
            return
        }
        // The request path: every field fits its width; 24 bytes written in place and appended once.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 24) { out in
            func put(_ value: Int64, width: Int, at start: Int) {
                var rest = value
                for index in stride(from: start + width - 1, through: start, by: -1) {
                    out[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10)
                    rest /= 10
                }
            }
            put(year, width: 4, at: 0)
            out[4] = UInt8(ascii: "-")
            put(month, width: 2, at: 5)
            out[7] = UInt8(ascii: "-")
            put(day, width: 2, at: 8)
            out[10] = UInt8(ascii: "T")
            put(hour, width: 2, at: 11)
            out[13] = UInt8(ascii: ":")
            put(minute, width: 2, at: 14)
            out[16] = UInt8(ascii: ":")
            put(second, width: 2, at: 17)
            out[19] = UInt8(ascii: ".")
            put(millisecond, width: 3, at: 20)
            out[23] = UInt8(ascii: "Z")
            bytes.append(contentsOf: UnsafeBufferPointer(out))
        }
    }

    /// Appends `String(value)` left-padded with zeros to `width`, without building the string.
    private static func appendPadded(_ value: Int64, width: Int, to bytes: inout [UInt8]) {
        var length = value < 0 ? 2 : 1
        var rest = value.magnitude / 10
        while rest > 0 {
            length += 1
            rest /= 10
        }
        for _ in 0..<max(0, width - length) { bytes.append(UInt8(ascii: "0")) }
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        JSONText.appendUnsigned(value.magnitude, to: &bytes)
    }

    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> (Int64, Int64) {
        let quotient = value >= 0 ? value / divisor : (value - divisor + 1) / divisor
        return (quotient, value - quotient * divisor)
    }
}
