import Dispatch
import Foundation
import HTTPServer
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
    /// The client's address as a trusted proxy named it (`trustedProxies`), when the peer is such a proxy.
    var clientAddress: String?
    /// The trusted proxy the request came through (the peer), with ``clientAddress``.
    var proxy: String?
    /// The verified JWT's `sub`, when a channel route identified the request by one.
    var subject: String?
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
    /// The longest `sub` written; longer ones are cut and end with `…`.
    static let maxSubjectBytes = 256

    /// The entry as one JSON object (no trailing newline):
    /// `{"time":"2026-12-02T18:30:00.123Z","level":"info","method":"GET","path":"/health","status":200,"duration_ms":0.041,"bytes":15}`,
    /// then, when known, `query`, `route`, `events`, `end`, `request_id`, `trace_id`, `remote`, `client` and
    /// `proxy` (behind a trusted proxy), `sub`, `user_agent` and `upstream` (an object: `url`, `error`, `status`,
    /// `attempts`, `timeout_s`).
    var jsonBytes: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(256 + path.utf8.count + (query?.utf8.count ?? 0))
        appendJSON(to: &bytes)
        return bytes
    }

    /// Appends ``jsonBytes`` to `bytes` (a log sink's buffer, say).
    func appendJSON(to bytes: inout [UInt8]) {
        if appendJSONInRuns(to: &bytes) { return }
        appendJSONFieldByField(to: &bytes)
    }

    /// The fields both ways of writing the line end with (the client and proxy addresses, the token's subject and
    /// the user agent, clipped, and an upstream failure) and the closing brace.
    private func appendClosingFields(to bytes: inout [UInt8]) {
        if let clientAddress {
            Self.append(#","client":"#, to: &bytes)
            Self.appendClipped(clientAddress, maxBytes: Self.maxUserAgentBytes, to: &bytes)
        }
        if let proxy {
            Self.append(#","proxy":"#, to: &bytes)
            Self.appendQuotedPlain(proxy, to: &bytes)
        }
        if let subject {
            Self.append(#","sub":"#, to: &bytes)
            Self.appendClipped(subject, maxBytes: Self.maxSubjectBytes, to: &bytes)
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

    /// The line of (nearly) every request in one write to `bytes`, the same bytes as
    /// ``appendJSONFieldByField(to:)``: everything up to the user agent is written in place in stack memory and
    /// appended in one copy, as each `Array.append` costs about a hundred instructions of capacity and
    /// uniqueness checks and a line has some forty pieces. Returns false, having written nothing, when a field
    /// needs the general way: a value that must be escaped, a query to redact or clip, a long path, a year
    /// outside 0...9999, a duration that is not a plain number.
    private func appendJSONInRuns(to bytes: inout [UInt8]) -> Bool {
        let milliseconds = durationSeconds * 1000
        // `JSONText.appendDecimal(milliseconds, fractionDigits: 3)`'s plain case: at most 19 digits.
        let thousandths = (abs(milliseconds) * 1000).rounded()
        // Whether the strings need an escape is found while the run copies them (``Run/isPlain``).
        guard milliseconds.isFinite, thousandths < 9.0e18, let clock = CivilTime(time),
            method.utf8.count <= Self.maxRunMethodBytes, path.utf8.count <= Self.maxRunPathBytes,
            query.map({ $0.utf8.count <= Self.maxQueryBytes && !redaction.redacts($0) }) ?? true
        else {
            return false
        }
        // The literals, quotes, time, trace ID and the four numbers at their longest take 299 bytes, so 330 and
        // the strings' own lengths. A run sized too small traps: a test writes that longest line.
        var capacity = 330 &+ method.utf8.count &+ path.utf8.count
        if let end { capacity &+= end.rawValue.utf8.count }
        if let query { capacity &+= query.utf8.count }
        if let route { capacity &+= route.utf8.count }
        if let correlation { capacity &+= correlation.requestID.utf8.count }
        if let remoteAddress { capacity &+= remoteAddress.utf8.count }
        let written = appendRun(capacity: capacity, to: &bytes) { run, entry in
            run.put(#"{"time":""#)
            run.put(clock)
            run.put(#"","level":"info","method":"#)
            run.put(quoted: entry.method)
            run.put(#","path":"#)
            run.put(quoted: entry.path)
            if let query = entry.query {
                run.put(#","query":"#)
                run.put(quoted: query)
            }
            if let route = entry.route {
                run.put(#","route":"#)
                run.put(quoted: route)
            }
            run.put(#","status":"#)
            run.put(integer: entry.status)
            run.put(#","duration_ms":"#)
            let whole = UInt64(thousandths)
            if milliseconds < 0 && whole > 0 { run.put(UInt8(ascii: "-")) }
            run.put(digits: whole / 1000)
            run.put(UInt8(ascii: "."))
            run.put(padded: Int64(whole % 1000), width: 3)
            run.put(#","bytes":"#)
            run.put(integer: entry.bytes)
            if let events = entry.events {
                run.put(#","events":"#)
                run.put(integer: events)
            }
            if let end = entry.end {
                run.put(#","end":"#)
                run.put(quoted: end.rawValue)
            }
            if let correlation = entry.correlation {
                run.put(#","request_id":"#)
                run.put(quoted: correlation.requestID)
                run.put(#","trace_id":""#)
                run.put(traceID: correlation.traceID)
                run.put(UInt8(ascii: "\""))
            }
            if let remoteAddress = entry.remoteAddress {
                run.put(#","remote":"#)
                run.put(quoted: remoteAddress)
            }
        }
        guard written else { return false }
        appendClosingFields(to: &bytes)
        return true
    }

    /// The longest path written in a run (a longer one goes the general way, so a run stays small).
    private static let maxRunPathBytes = 2048

    /// The longest method written in a run (a longer one, which the parser may let through, goes the general way).
    private static let maxRunMethodBytes = 32

    /// Lends `write` a ``Run`` of `capacity` bytes of stack memory, then appends what it wrote to `bytes`.
    private static func appendRun(capacity: Int, to bytes: inout [UInt8], _ write: (inout Run) -> Void) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity) { buffer in
            var run = Run(buffer)
            write(&run)
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[..<run.count]))
        }
    }

    /// ``appendRun(capacity:to:_:)`` whose `write` reads the entry as an argument (a closure that captured it
    /// would copy it: a retain and a release for each of its strings). Appends nothing and returns false when a
    /// string it quoted needs an escape (``Run/isPlain``).
    private func appendRun(
        capacity: Int,
        to bytes: inout [UInt8],
        _ write: (inout Run, RequestLogEntry) -> Void
    ) -> Bool {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity) { buffer in
            var run = Run(buffer)
            write(&run, self)
            guard run.isPlain else { return false }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[..<run.count]))
            return true
        }
    }

    /// The line as ``appendJSONInRuns(to:)`` writes it, field by field, whatever the values.
    func appendJSONFieldByField(to bytes: inout [UInt8]) {
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
        appendClosingFields(to: &bytes)
    }

    /// Appends `text` in quotes as it is when none of its bytes needs a JSON escape (request IDs, which are
    /// validated to a safe set; route patterns; IP addresses), in one copy; otherwise escaped.
    @inline(__always)
    static func appendQuotedPlain(_ text: String, to bytes: inout [UInt8]) {
        let copied: Bool? = text.utf8.withContiguousStorageIfAvailable { utf8 in
            guard !utf8.contains(where: JSONText.needsEscape) else { return false }
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
        if let clock = CivilTime(date) {
            // The request path: every field fits its width; 24 bytes written in place and appended once.
            appendRun(capacity: 24, to: &bytes) { $0.put(clock) }
            return
        }
        // Outside years 0...9999, `String(value)` left-padded with zeros, as a formatter would write it.
        let fields = CivilTime.fields(date)
        appendPadded(fields.year, width: 4, to: &bytes)
        for (separator, value, width) in [
            ("-", fields.month, 2), ("-", fields.day, 2), ("T", fields.hour, 2), (":", fields.minute, 2),
            (":", fields.second, 2), (".", fields.millisecond, 3),
        ] as [(Unicode.Scalar, Int64, Int)] {
            bytes.append(UInt8(ascii: separator))
            appendPadded(value, width: width, to: &bytes)
        }
        bytes.append(UInt8(ascii: "Z"))
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

}

/// A date's UTC calendar fields, for ``RequestLogEntry/appendISO8601(_:to:)``: computed by hand (civil from
/// days, proleptic Gregorian), no formatter on the request path.
///
/// **Thread safety:** value type; not shared.
private struct CivilTime {
    let year: Int64
    let month: Int64
    let day: Int64
    let hour: Int64
    let minute: Int64
    let second: Int64
    let millisecond: Int64
}

// In an extension, so that the struct keeps its memberwise initializer (``fields(_:)`` builds with it).
extension CivilTime {
    /// The fields of `date`, or `nil` outside years 0...9999 (whose text is not 24 bytes).
    init?(_ date: Date) {
        let fields = Self.fields(date)
        guard (0...9999).contains(fields.year) else { return nil }
        self = fields
    }

    /// The fields of `date`, whatever its year.
    static func fields(_ date: Date) -> CivilTime {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        let (days, dayMilliseconds) = floorDivide(milliseconds, 86_400_000)
        let date = CivilDate(daysSince1970: days)
        return CivilTime(
            year: date.year,
            month: Int64(date.month),
            day: Int64(date.day),
            hour: dayMilliseconds / 3_600_000,
            minute: dayMilliseconds / 60_000 % 60,
            second: dayMilliseconds / 1000 % 60,
            millisecond: dayMilliseconds % 1000
        )
    }

    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> (Int64, Int64) {
        let quotient = value >= 0 ? value / divisor : (value - divisor + 1) / divisor
        return (quotient, value - quotient * divisor)
    }
}

/// A stretch of a log line of bounded length, written in place into memory lent by
/// ``RequestLogEntry/appendRun(capacity:to:_:)``. Its writer sizes it from the literals, at most 20 digits
/// per number and the byte counts of the strings it puts; writing past it is a programming error and traps.
///
/// **Thread safety:** value type; lives for one run.
private struct Run {
    private let buffer: UnsafeMutableBufferPointer<UInt8>
    private(set) var count = 0
    /// False once a string put with ``put(quoted:)`` held a byte JSON escapes (a control character, `"`, `\`,
    /// DEL): the run is then not the line's text, and its writer goes the general way.
    private(set) var isPlain = true

    init(_ buffer: UnsafeMutableBufferPointer<UInt8>) {
        self.buffer = buffer
    }

    @inline(__always)
    mutating func put(_ byte: UInt8) {
        precondition(count < buffer.count, "log line run sized too small")
        buffer[count] = byte
        count += 1
    }

    @inline(__always)
    mutating func put(_ text: StaticString) {
        put(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    @inline(__always)
    mutating func put(_ bytes: UnsafeBufferPointer<UInt8>) {
        precondition(bytes.count <= buffer.count - count, "log line run sized too small")
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        (buffer.baseAddress! + count).update(from: source, count: bytes.count)
        count += bytes.count
    }

    /// `text` between quotes, as it is; clears ``isPlain`` if it needs an escape.
    @inline(__always)
    mutating func put(quoted text: String) {
        put(UInt8(ascii: "\""))
        let copied: Void? = text.utf8.withContiguousStorageIfAvailable { bytes in
            put(bytes)
            for byte in bytes where JSONText.needsEscape(byte) {
                isPlain = false
                break
            }
        }
        if copied == nil {
            for byte in text.utf8 {
                put(byte)
                if JSONText.needsEscape(byte) { isPlain = false }
            }
        }
        put(UInt8(ascii: "\""))
    }

    /// `value` in decimal, as `JSONText.appendUnsigned` writes it.
    mutating func put(digits value: UInt64) {
        var divisor: UInt64 = 1
        while divisor <= value / 10 { divisor &*= 10 }
        repeat {
            put(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value / divisor % 10))
            divisor /= 10
        } while divisor > 0
    }

    /// `value` in decimal, as `JSONText.appendInteger` writes it.
    mutating func put(integer value: Int) {
        if value < 0 { put(UInt8(ascii: "-")) }
        put(digits: UInt64(value.magnitude))
    }

    /// `value` (not negative, below 10^width) in `width` digits, zeros first.
    @inline(__always)
    mutating func put(padded value: Int64, width: Int) {
        precondition(width <= buffer.count - count, "log line run sized too small")
        var rest = value
        for index in stride(from: count + width - 1, through: count, by: -1) {
            buffer[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10)
            rest /= 10
        }
        count += width
    }

    /// `yyyy-MM-ddTHH:mm:ss.SSSZ`.
    mutating func put(_ clock: CivilTime) {
        put(padded: clock.year, width: 4)
        put(UInt8(ascii: "-"), twoDigits: clock.month)
        put(UInt8(ascii: "-"), twoDigits: clock.day)
        put(UInt8(ascii: "T"), twoDigits: clock.hour)
        put(UInt8(ascii: ":"), twoDigits: clock.minute)
        put(UInt8(ascii: ":"), twoDigits: clock.second)
        put(UInt8(ascii: "."))
        put(padded: clock.millisecond, width: 3)
        put(UInt8(ascii: "Z"))
    }

    /// `separator`, then `value` (0...99) in two digits.
    @inline(__always)
    private mutating func put(_ separator: UInt8, twoDigits value: Int64) {
        precondition(count + 3 <= buffer.count, "log line run sized too small")
        let value = UInt8(truncatingIfNeeded: value)
        buffer[count] = separator
        buffer[count + 1] = UInt8(ascii: "0") &+ value / 10
        buffer[count + 2] = UInt8(ascii: "0") &+ value % 10
        count += 3
    }

    /// The 32 lowercase hex digits of a trace ID, as `Hex.append128` writes them.
    mutating func put(traceID: (high: UInt64, low: UInt64)) {
        Hex.withDigits128(traceID.high, traceID.low) { digits in
            precondition(digits.count <= buffer.count - count, "log line run sized too small")
            UnsafeMutableRawPointer(buffer.baseAddress! + count).copyMemory(
                from: digits.baseAddress!,
                byteCount: digits.count
            )
            count += digits.count
        }
    }
}
