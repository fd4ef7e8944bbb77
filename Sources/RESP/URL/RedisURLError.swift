/// Why a `redis://` or `rediss://` URL could not be used; each case carries the offending part (never the password).
///
/// **Ownership:** A value; thrown by ``RedisURL/init(parsing:)``.
/// **Thread safety:** Value type; not shared.
public enum RedisURLError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The URL does not start with `redis://` or `rediss://`.
    case unsupportedScheme(String)
    /// There is no host between `//` and the port or path.
    case missingHost
    /// The host holds a character a host name or bracketed IPv6 address may not.
    case invalidHost(String)
    /// The port is not a number in 1…65535.
    case invalidPort(String)
    /// The path is not a database number.
    case invalidDatabase(String)
    /// The username or password holds a `%` not followed by two hex digits.
    case invalidPercentEncoding
    /// The userinfo has a username but no `:password`.
    case usernameWithoutPassword
    /// The URL has a query or fragment, which the client does not read.
    case unexpectedComponent(String)

    /// A short lowercase message saying what was wrong.
    public var description: String {
        switch self {
        case .unsupportedScheme(let scheme):
            return "redis url must start with redis:// or rediss://, got \"\(scheme)\""
        case .missingHost:
            return "redis url has no host"
        case .invalidHost(let host):
            return "redis url host is not a host name or [ipv6] address, got \"\(host)\""
        case .invalidPort(let port):
            return "redis url port must be 1...65535, got \"\(port)\""
        case .invalidDatabase(let path):
            return "redis url path must be a database number, got \"\(path)\""
        case .invalidPercentEncoding:
            return "redis url username or password has a % not followed by two hex digits"
        case .usernameWithoutPassword:
            return
                "redis url has a username without a password; write redis://user:password@host (or redis://:password@host)"
        case .unexpectedComponent(let text):
            return "redis url must not have a query or fragment, got \"\(text)\""
        }
    }
}
