/// Why a configuration could not be loaded. Start-up stops with this message.
///
/// **Thread safety:** value type; not shared.
public enum ConfigError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The configuration file could not be read.
    case unreadableFile(path: String, reason: String)
    /// The configuration file is not a JSON object.
    case malformedFile(path: String, reason: String)
    /// A key that Spout does not know (usually a typo).
    case unknownKey(String, source: String)
    /// A key whose value has the wrong type or is out of range.
    case invalidValue(key: String, value: String, expected: String, source: String)
    /// A command-line flag Spout does not know, or one missing its value.
    case invalidFlag(String)

    public var description: String {
        switch self {
        case .unreadableFile(let path, let reason):
            "cannot read configuration file \(path): \(reason)"
        case .malformedFile(let path, let reason):
            "configuration file \(path) is not a JSON object: \(reason)"
        case .unknownKey(let key, let source):
            "unknown configuration key \"\(key)\" in \(source)"
        case .invalidValue(let key, let value, let expected, let source):
            "configuration key \"\(key)\" must be \(expected), got \(value) (from \(source))"
        case .invalidFlag(let flag):
            "unknown or incomplete flag \(flag); try --help"
        }
    }
}
