/// An HTTP protocol version such as `HTTP/1.1`.
///
/// **Ownership:** A value; owned by whoever holds it.
/// **Thread safety:** Value type; not shared.
public struct Version: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The major version digit.
    public var major: Int
    /// The minor version digit.
    public var minor: Int

    /// Creates a version from its two digits.
    public init(major: Int, minor: Int) {
        self.major = major
        self.minor = minor
    }

    /// `HTTP/1.0`.
    public static let http1_0 = Version(major: 1, minor: 0)
    /// `HTTP/1.1`.
    public static let http1_1 = Version(major: 1, minor: 1)

    /// The version as written on a start line, e.g. `HTTP/1.1`.
    public var description: String { "HTTP/\(major).\(minor)" }

    /// Orders by major, then minor version, so `version >= .http1_1` reads as expected.
    public static func < (lhs: Version, rhs: Version) -> Bool {
        (lhs.major, lhs.minor) < (rhs.major, rhs.minor)
    }
}
