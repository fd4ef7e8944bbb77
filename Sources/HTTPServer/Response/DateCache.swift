/// The `Date` header line (RFC 9110 §5.6.7 IMF-fixdate), formatted at most once a second per loop.
///
/// Formatting is done by hand from the epoch seconds (civil-from-days), so the hot path never touches
/// Foundation: a response copies 37 cached bytes.
///
/// **Ownership:** One per ``LoopContext`` (a server's share of a loop), retained by it.
///
/// **Thread safety:** Value type; the loop's copy is confined to the loop's queue.
package struct DateCache {
    /// `Date: ` + 29 bytes of IMF-fixdate + CRLF.
    package static let lineLength = 37

    private var second: Int64 = .min
    private var line: (UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0)  // 40 bytes, 37 used

    package init() {}

    /// Appends `Date: <now>\r\n` to `buffer`, reformatting only if the second changed.
    @inline(__always)
    package mutating func appendLine(to buffer: inout OutboundBuffer, now: Int64) {
        if now != second {
            second = now
            withUnsafeMutableBytes(of: &line) { DateCache.format(now, into: $0) }
        }
        withUnsafeBytes(of: &line) { buffer.append(UnsafeRawBufferPointer(rebasing: $0[0..<DateCache.lineLength])) }
    }

    /// The IMF-fixdate for `epochSeconds`, e.g. `Sun, 06 Nov 1994 08:49:37 GMT`.
    package static func imfFixdate(_ epochSeconds: Int64) -> String {
        var bytes = [UInt8](repeating: 0, count: lineLength)
        bytes.withUnsafeMutableBytes { format(epochSeconds, into: $0) }
        return String(decoding: bytes[6..<35], as: UTF8.self)
    }

    private static let weekdays: [StaticString] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]
    private static let months: [StaticString] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]

    private static func format(_ epochSeconds: Int64, into out: UnsafeMutableRawBufferPointer) {
        let days = epochSeconds >= 0 ? epochSeconds / 86_400 : (epochSeconds - 86_399) / 86_400
        let secondOfDay = Int(epochSeconds - days * 86_400)
        let date = CivilDate(daysSince1970: days)
        let (year, month, day) = (date.year, date.month, date.day)
        let weekday = Int(((days % 7) + 7) % 7)  // 1970-01-01 was a Thursday.
        var index = 0
        func put(_ string: StaticString) {
            for offset in 0..<string.utf8CodeUnitCount {
                out[index] = string.utf8Start[offset]
                index += 1
            }
        }
        func put2(_ value: Int) {
            out[index] = UInt8(value / 10 % 10) + 0x30
            out[index + 1] = UInt8(value % 10) + 0x30
            index += 2
        }
        put("Date: ")
        put(weekdays[weekday])
        put(", ")
        put2(day)
        put(" ")
        put(months[month - 1])
        put(" ")
        let clampedYear = Int(min(max(year, 0), 9999))
        put2(clampedYear / 100)
        put2(clampedYear % 100)
        put(" ")
        put2(secondOfDay / 3600)
        put(":")
        put2(secondOfDay / 60 % 60)
        put(":")
        put2(secondOfDay % 60)
        put(" GMT\r\n")
    }
}
