/// How the body after a head is delimited.
enum BodyFraming: Equatable {
    /// `Content-Length: n`.
    case contentLength(Int)
    /// `Transfer-Encoding: chunked`.
    case chunked
    /// No length: the body ends when the connection closes (HTTP/1.0 streams).
    case untilClose
    /// No body and no framing header (1xx, 204, 304).
    case none
}
