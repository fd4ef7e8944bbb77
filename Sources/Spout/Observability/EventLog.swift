import Foundation

/// The service's own messages — start-up, configuration, shutdown — as JSON lines with a level, into the same
/// sink as the request log:
///
///     {"time":"2026-12-04T10:00:00.000Z","level":"info","event":"listening","message":"listening on http://127.0.0.1:8080","port":8080}
///
/// **Ownership:** created by the executable (or a test) and handed to the service.
///
/// **Thread safety:** safe to call from any thread (the sink is).
public final class EventLog: Sendable {
    /// A value of an extra field.
    public enum Value: Sendable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
        case string(String)
        case integer(Int)
        case number(Double)
        case boolean(Bool)

        public init(stringLiteral value: String) { self = .string(value) }
        public init(integerLiteral value: Int) { self = .integer(value) }
    }

    /// Where lines go.
    public let sink: any LogSink
    /// The lowest level written.
    public let level: LogLevel

    /// Creates a log writing lines at `level` and above to `sink`.
    public init(sink: any LogSink, level: LogLevel = .info) {
        self.sink = sink
        self.level = level
    }

    /// Whether a line at `level` would be written.
    public func isEnabled(_ level: LogLevel) -> Bool { level >= self.level }

    /// Writes one line: the time, `level`, `event` (a stable name to match on), `message` (for people) and `fields`.
    public func log(
        _ level: LogLevel,
        _ event: String,
        _ message: String,
        _ fields: KeyValuePairs<String, Value> = [:],
        time: Date = Date()
    ) {
        log(level, event, message, fields.map { ($0.key, $0.value) }, time: time)
    }

    /// Writes one line with fields built at run time.
    public func log(
        _ level: LogLevel,
        _ event: String,
        _ message: String,
        _ fields: [(String, Value)],
        time: Date = Date()
    ) {
        guard isEnabled(level) else { return }
        sink.write(line: Self.line(level, event, message, fields, time: time))
    }

    /// The bytes of one line (no newline).
    static func line(_ level: LogLevel, _ event: String, _ message: String, _ fields: [(String, Value)], time: Date)
        -> [UInt8]
    {
        var bytes = Array(#"{"time":""#.utf8)
        RequestLogEntry.appendISO8601(time, to: &bytes)
        bytes += Array(#"","level":""#.utf8)
        bytes += Array(level.rawValue.utf8)
        bytes += Array(#"","event":"#.utf8)
        JSONText.appendString(event, to: &bytes)
        bytes += Array(#","message":"#.utf8)
        JSONText.appendString(message, to: &bytes)
        for (name, value) in fields {
            bytes.append(UInt8(ascii: ","))
            JSONText.appendString(name, to: &bytes)
            bytes.append(UInt8(ascii: ":"))
            switch value {
            case .string(let text): JSONText.appendString(text, to: &bytes)
            case .integer(let integer): JSONText.appendInteger(integer, to: &bytes)
            case .number(let number):
                if number.isFinite {
                    JSONText.appendDecimal(number, fractionDigits: 3, to: &bytes)
                } else {
                    bytes += Array("null".utf8)
                }
            case .boolean(let flag): bytes += Array((flag ? "true" : "false").utf8)
            }
        }
        bytes.append(UInt8(ascii: "}"))
        return bytes
    }
}
