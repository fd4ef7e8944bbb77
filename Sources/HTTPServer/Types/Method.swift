/// An HTTP request method: a case-sensitive token such as `GET` (RFC 9110 §9.1).
///
/// Any token the parser accepts becomes a `Method`, so `get` (lowercase) is a valid method that is *not* ``get``;
/// the router answers it like any other unknown method.
///
/// **Ownership:** A value; owned by whoever holds it.
/// **Thread safety:** Value type; not shared.
public struct Method: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The method token exactly as it appeared on the request line.
    public let rawValue: String

    /// Creates a method from its token. The token is not validated here; the parser only produces valid tokens.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// Creates a method from its token, like ``init(rawValue:)``.
    public init(_ rawValue: String) {
        self.rawValue = rawValue
    }

    public var description: String { rawValue }

    /// `GET`.
    public static let get = Method(rawValue: "GET")
    /// `HEAD`.
    public static let head = Method(rawValue: "HEAD")
    /// `POST`.
    public static let post = Method(rawValue: "POST")
    /// `PUT`.
    public static let put = Method(rawValue: "PUT")
    /// `DELETE`.
    public static let delete = Method(rawValue: "DELETE")
    /// `OPTIONS`.
    public static let options = Method(rawValue: "OPTIONS")
    /// `PATCH`.
    public static let patch = Method(rawValue: "PATCH")
    /// `TRACE`.
    public static let trace = Method(rawValue: "TRACE")
    /// `CONNECT`.
    public static let connect = Method(rawValue: "CONNECT")
}
