import Foundation

/// How important a log line is. Request lines are ``info``; `log.level` sets the lowest level written.
public enum LogLevel: String, Sendable, CaseIterable, Comparable {
    case debug
    case info
    case warn
    case error

    private var rank: Int {
        switch self {
        case .debug: 0
        case .info: 1
        case .warn: 2
        case .error: 3
        }
    }

    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rank < rhs.rank }
}
