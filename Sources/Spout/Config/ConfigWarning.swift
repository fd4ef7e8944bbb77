import Foundation

/// A `SPOUT_*` environment variable that sets nothing, reported at start-up.
///
/// **Thread safety:** value type; not shared.
public struct ConfigWarning: Equatable, Sendable, CustomStringConvertible {
    /// The variable's name.
    public var variable: String
    /// The closest known variable, if one is close enough to be the intended one.
    public var suggestion: String?

    public var description: String {
        "unknown environment variable \(variable) is ignored" + (suggestion.map { "; did you mean \($0)?" } ?? "")
    }
}
