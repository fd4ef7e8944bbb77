import EventLoops
/// The handle a handler answers one request with: a fixed response, or the start of a streamed one.
///
/// Exactly one of ``respond(status:headers:body:)-(_,_,[UInt8])`` or ``startStreaming(status:headers:)``
/// may be called per request. An answer that arrives after the connection has gone is dropped silently;
/// a second answer to the same live request is an API violation and traps.
///
/// **Ownership:** A small value the handler may copy and keep (e.g. capture in a callback); it retains
/// the connection until dropped.
///
/// **Thread safety:** Confined to its connection's loop queue (``loop``): hop with `loop.execute { }` from
/// other threads. Entry points check it.
public struct Responder: Sendable {
    let connection: Connection
    let requestID: UInt64

    /// The loop the request arrived on; answer on it.
    public var loop: EventLoop { connection.loop }

    /// Whether the request still awaits an answer (not answered yet, and the connection is open).
    public var isAwaitingResponse: Bool {
        connection.loop.preconditionInEventLoop()
        return connection.isAwaiting(requestID)
    }

    /// Answers with a complete body. `Content-Length` (and `Date`, `Connection`) are added; a `HEAD`
    /// request gets the head alone. The head and body leave in one write.
    public func respond(status: Status = .ok, headers: Headers = [:], body: UnsafeRawBufferPointer) {
        connection.respond(to: requestID, status: status, headers: headers, body: body)
    }

    /// Answers with a complete body. See ``respond(status:headers:body:)-(_,_,UnsafeRawBufferPointer)``.
    public func respond(status: Status = .ok, headers: Headers = [:], body: [UInt8] = []) {
        body.withUnsafeBytes { respond(status: status, headers: headers, body: $0) }
    }

    /// Answers with a complete body, with `extra` written after `headers` (see ``ExtraFields``).
    package func respond(status: Status, headers: Headers, appending extra: ExtraFields, body: [UInt8]) {
        body.withUnsafeBytes {
            connection.respond(to: requestID, status: status, headers: headers, appending: extra, body: $0)
        }
    }

    /// Answers with the UTF-8 bytes of `body`.
    public func respond(status: Status = .ok, headers: Headers = [:], body: String) {
        var body = body
        body.withUTF8 { respond(status: status, headers: headers, body: UnsafeRawBufferPointer($0)) }
    }

    /// Calls `handler` on the loop if the client leaves before this request is answered, so a handler
    /// that is still working (waiting on an outbound call, say) can cancel that work. Once the request is
    /// answered the handler is dropped uncalled; if the client has already left, it is called at once.
    /// One handler per request: a second call replaces the first.
    ///
    /// While a handler is set the connection watches for the peer's FIN, and, as for a streamed
    /// response, a client that half-closes its side after sending the request counts as gone.
    public func onAbandon(_ handler: @escaping () -> Void) {
        connection.setAbandonHandler(for: requestID, handler)
    }

    /// Starts a streamed response (chunked for HTTP/1.1; until-close for HTTP/1.0) and returns its writer.
    /// The head is sent with the first body bytes, or at the end of the loop turn.
    /// If the connection is already gone, the returned writer is closed (writes do nothing).
    public func startStreaming(status: Status = .ok, headers: Headers = [:]) -> BodyWriter {
        connection.startStream(for: requestID, status: status, headers: headers)
    }
}
