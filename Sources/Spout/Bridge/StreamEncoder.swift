import HTTPServer

/// Turns the elements of one stream into body bytes: the framing of one format.
///
/// The demand bridge calls it on the connection's loop, writing straight into the outbound buffer. The
/// formats: ``SSETermEncoder`` and ``NDJSONTermEncoder`` for sequence terms, ``SSEJSONEncoder`` and
/// ``NDJSONEventEncoder`` for JSON documents.
///
/// **Thread safety:** value type; used on one loop at a time.
protocol StreamEncoder: Sendable {
    /// The kind of element encoded.
    associatedtype Element

    /// Bytes written once, before the first element (SSE: the `retry:` field, which joins the first frame's
    /// block). Nothing a client would see as an event on its own.
    func appendPrologue(to buffer: inout OutboundBuffer)

    /// Appends one element.
    func append(_ element: Element, to buffer: inout OutboundBuffer)

    /// Appends several elements in order, as calls to ``append(_:to:)`` would.
    func append(contentsOf elements: UnsafeBufferPointer<Element>, to buffer: inout OutboundBuffer)

    /// Appends the final frame for a stream that ended without failing (`completed` or `shutdown`).
    func appendEnd(_ reason: StreamEnd, to buffer: inout OutboundBuffer)

    /// Appends the frame for a stream whose producer failed.
    func appendFailure(_ problem: Problem, to buffer: inout OutboundBuffer)

    /// Appends a keep-alive that clients ignore, or nothing if the format has none.
    func appendHeartbeat(to buffer: inout OutboundBuffer)
}

extension StreamEncoder {
    @inline(__always)
    func append(contentsOf elements: UnsafeBufferPointer<Element>, to buffer: inout OutboundBuffer) {
        // Indexing borrows each element in place; `for element in elements` would copy (retain) each one.
        for index in elements.indices { append(elements[index], to: &buffer) }
    }
}
