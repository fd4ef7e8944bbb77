/// What the `Connection` header must say.
enum ConnectionHeader {
    /// Nothing (HTTP/1.1 keep-alive is the default).
    case omitted
    /// `Connection: keep-alive` (HTTP/1.0 keep-alive must be explicit).
    case keepAlive
    /// `Connection: close`.
    case close
}
