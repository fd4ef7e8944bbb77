/// What ``RequestParser/next()`` found in the buffered bytes.
///
/// A request yields `.head`, then zero or more `.body` slices, then `.end`; `.needMoreData` may come between any
/// of them.
///
/// **Ownership:** A value; a `.body` slice shares the parser's buffer until it is dropped.
/// **Thread safety:** Value type; not shared.
public enum ParseEvent: Equatable, Sendable {
    /// Every buffered byte was used; append more before calling ``RequestParser/next()`` again.
    case needMoreData
    /// The request line and header section of the next request.
    case head(RequestHead)
    /// The next piece of the body, chunked framing removed. Never empty. The slice shares the parser's buffer and
    /// keeps its indices, so it does not start at 0: use `startIndex`, or copy it with `Array(slice)`.
    case body(ArraySlice<UInt8>)
    /// The request is complete. `trailers` holds the chunked trailer section, or nil when there was none.
    case end(trailers: Headers?)
}
