/// How the bytes of a streamed body go on the wire.
enum StreamBodyMode: Equatable {
    /// Framed as HTTP chunks (HTTP/1.1).
    case chunked
    /// As they are; the body ends when the connection closes (HTTP/1.0).
    case raw
    /// Dropped (`HEAD`, or a status that has no body).
    case discard
}
