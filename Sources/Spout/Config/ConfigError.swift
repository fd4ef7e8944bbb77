/// Why a configuration could not be loaded. Start-up stops with this message.
///
/// **Thread safety:** value type; not shared.
public enum ConfigError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The configuration file could not be read.
    case unreadableFile(path: String, reason: String)
    /// The configuration file is JSON but not a JSON object.
    case malformedFile(path: String, reason: String)
    /// The configuration file is not valid JSON: where (1-based line and column) and why.
    case invalidJSON(path: String, line: Int, column: Int, reason: String)
    /// A key that Spout does not know (usually a typo), with the closest known key if one is close.
    case unknownKey(String, source: String, suggestion: String?)
    /// A key whose value has the wrong type or is out of range; `value` says what it was
    /// (`a string "8081"`, `a number 80.5`).
    case invalidValue(key: String, value: String, expected: String, source: String)
    /// A command-line flag Spout does not know, or one missing its value.
    case invalidFlag(String, suggestion: String?)

    public var description: String {
        switch self {
        case .unreadableFile(let path, let reason):
            "cannot read configuration file \(path): \(reason)"
        case .malformedFile(let path, let reason):
            "configuration file \(path) is not a JSON object: \(reason)"
        case .invalidJSON(let path, let line, let column, let reason):
            "configuration file \(path) is not valid JSON: line \(line), column \(column): \(reason)"
        case .unknownKey(let key, let source, let suggestion):
            "unknown configuration key \"\(key)\" in \(source)" + (suggestion.map { "; did you mean \"\($0)\"?" } ?? "")
        case .invalidValue(let key, let value, let expected, let source):
            "configuration key \"\(key)\" must be \(expected), got \(value) (from \(source))"
        case .invalidFlag(let flag, let suggestion):
            "unknown or incomplete flag \(flag)" + (suggestion.map { "; did you mean \($0)?" } ?? "") + " (see --help)"
        }
    }
}
