/// A complete HTTP request: its head and its whole body, as handed to the router.
///
/// The body is bounded by ``RequestParser/Configuration/maxBodyBytes``.
///
/// **Ownership:** A value; built by the connection once the parser reports the end of the request.
/// **Thread safety:** Value type; not shared.
public struct Request: Sendable, Equatable {
    /// The request line and headers.
    public var head: RequestHead
    /// The whole decoded body (chunked framing removed); empty when the request has none.
    public var body: [UInt8]
    /// The IP address of the client's end of the connection, as text (`127.0.0.1`, `::1`), read once per
    /// connection when it is accepted; `""` when it could not be told. This is the TCP peer: behind a proxy
    /// it is the proxy.
    public var remoteAddress: String

    /// Creates a request from its head, body and the peer's address.
    public init(head: RequestHead, body: [UInt8] = [], remoteAddress: String = "") {
        self.head = head
        self.body = body
        self.remoteAddress = remoteAddress
    }

    /// The request method.
    public var method: Method { head.method }
    /// The undecoded path; see ``RequestHead/path``.
    public var path: String { head.path }
    /// The raw query without `?`; see ``RequestHead/query``.
    public var query: String? { head.query }
    /// The decoded query items; see ``RequestHead/queryItems``.
    public var queryItems: [(name: String, value: String)] { head.queryItems }
    /// The header fields.
    public var headers: Headers { head.headers }
    /// The protocol version.
    public var version: Version { head.version }
    /// Whether the connection may stay open after the response; see ``RequestHead/keepAlive``.
    public var keepAlive: Bool { head.keepAlive }
}
