import OpenSSL

extension Server {
    /// Everything a ``Server`` can be tuned with. Each field documents its default and unit.
    ///
    /// **Ownership:** A value, copied into the server at start.
    ///
    /// **Thread safety:** Value type; not shared.
    ///
    /// ## Watermarks: memory per connection versus throughput
    ///
    /// A streaming response's ``BodyWriter`` accepts bytes into user space up to a *high watermark*, then
    /// reports not writable until the buffer drains to the *low watermark*. A fast reader wants large
    /// batches (one `send(2)` per ``highWatermarkBytes``); a slow or stalled reader must not pin that much
    /// heap, since whatever the kernel refuses stays in user space until the reader makes room.
    /// With ``adaptsHighWatermarkToReader`` on (the default) each stream starts at
    /// ``minimumHighWatermarkBytes``; the high watermark doubles after every flush the kernel took whole
    /// while nothing waited in the kernel for the peer's window (`SIOCOUTQNSD` = 0, asked only after a flush
    /// of at least half the high watermark), up to 16 KiB until the
    /// kernel has taken 8 MiB of the stream (more than a socket's kernel buffers can hide, so the reader is
    /// really reading) and up to ``highWatermarkBytes`` after that, and drops back to the minimum on a short send or unsent kernel bytes. So a
    /// fast reader reaches full batches within a few flushes, while a slow or stalled one is fed in small
    /// batches once its window closes and leaves at most about one of them in user space; the buffer's
    /// storage is released whenever it drains. Off, the high watermark is always ``highWatermarkBytes``.
    public struct Configuration: Sendable {
        /// The address to bind: a numeric IPv4 or IPv6 address or a host name. Default `"127.0.0.1"`;
        /// `"0.0.0.0"` or `"::"` for every interface.
        public var host: String = "127.0.0.1"
        /// The TCP port. Default `8080`; `0` lets the kernel choose (see ``Server/port``).
        public var port: Int = 8080
        /// The `listen(2)` backlog, in connections. Default `1024`.
        public var backlog: Int = 1024
        /// The parser's limits (header bytes, header count, body bytes, …), passed through unchanged.
        public var parser: RequestParser.Configuration = .init()
        /// Open connections beyond which a new one gets `503 Service Unavailable` with `Retry-After: 1` and is
        /// closed. Default `16_384` connections. At start it is clamped to the open-file limit minus
        /// ``reservedFileDescriptors`` (see ``Server/ConnectionLimit``; ``Server/connectionLimit`` tells the limit
        /// in force).
        public var maxConnections: Int = 16_384
        /// Descriptors kept for everything but client connections when ``maxConnections`` is clamped to the
        /// open-file limit. Default 128: standard input, output and error, the listener, the spare descriptor the
        /// server answers `503` from when out of descriptors, Dispatch's own (its epoll, eventfd, timerfd and
        /// signalfds), outbound `URLSession` sockets (up to 6 per upstream host, plus libcurl's resolver pairs),
        /// a log file, and room for a pool of Redis connections. The server adds one per event loop itself; the
        /// reserve never exceeds half the limit, so a tiny limit still leaves room for connections.
        public var reservedFileDescriptors: Int = 128
        /// Connections accepted beyond ``maxConnections`` on which only the requests that
        /// ``reserveConnectionAllows`` admits are served (health probes, metrics), one request per connection;
        /// any other request there gets `503` with `Retry-After: 1`, and connections beyond the reserve get it
        /// at accept as before. So a server that is merely full still answers its liveness and readiness probes
        /// instead of being restarted. Default 4; no reserve while ``reserveConnectionAllows`` is `nil`.
        public var probeConnectionReserve: Int = 4
        /// Which requests a probe-reserve connection serves (see ``probeConnectionReserve``), decided from the
        /// head on the connection's loop; keep it cheap. Default `nil`: no reserve.
        public var reserveConnectionAllows: (@Sendable (RequestHead) -> Bool)?
        /// How long a request head may take from its first byte to its last (slowloris guard); then
        /// `408 Request Timeout` and close. Default 10 s.
        public var headReadTimeout: Duration = .seconds(10)
        /// How long a keep-alive connection may wait for the next request, and how long a request body
        /// may go without a byte arriving (then `408`). Default 60 s.
        public var idleTimeout: Duration = .seconds(60)
        /// How long a request body may take from the end of its head to its last byte, however its bytes
        /// trickle in; then `408 Request Timeout` and close. Default 30 s.
        public var bodyReadTimeout: Duration = .seconds(30)
        /// How many body bytes a request may have, decided from its head: called on the connection's loop
        /// when a request's first body byte arrives (or at its head, when the client waits for
        /// `100 Continue`), never for a request without a body. A body over the limit (declared by
        /// `Content-Length` or counted as it arrives) is answered `413 Payload Too Large` with
        /// `Connection: close` before the rest is read; return 0 for requests that take no body. The
        /// parser's ``RequestParser/Configuration/maxBodyBytes`` applies on top. Default `nil`: every
        /// request may have up to the parser's limit.
        public var requestBodyLimit: (@Sendable (RequestHead) -> Int)?
        /// The body of an error the server answers by itself, before any handler runs (`413` for a body over
        /// the limit, `408`, `431`, `400` for a malformed request…): given the status and the reason in words,
        /// return a content type and body, or `nil` for the default `text/plain` reason. Called on the
        /// connection's loop; keep it cheap. Default `nil`.
        public var errorResponseBody: (@Sendable (Status, String) -> (contentType: String, body: [UInt8])?)?
        /// How long queued response bytes may sit without the kernel accepting a single one before the
        /// connection is closed. Any accepted byte resets it, so slow readers are never cut. Default 300 s.
        public var writeStallTimeout: Duration = .seconds(300)
        /// How long a connection may stay idle, once the server is draining (``Server/beginDraining()``) or on a
        /// probe-reserve connection, before it is closed gracefully. A client that keeps sending never waits
        /// this long between requests and is told `Connection: close` on a response instead. Default 1 s.
        public var drainIdleTimeout: Duration = .seconds(1)
        /// The kernel send buffer (`SO_SNDBUF`) of a connection once it starts a streamed response, in bytes;
        /// `nil` leaves the kernel's autotuning (up to `net.ipv4.tcp_wmem`'s maximum, several MB). A stalled
        /// reader pins its connection's send buffer for ``writeStallTimeout``, so the cap bounds kernel memory
        /// per stalled reader; the kernel doubles the value for its bookkeeping. Default 128 KiB.
        public var streamSendBufferBytes: Int? = 128 * 1024
        /// The bound, in seconds (at least 3), within which a connection that started a streamed response notices
        /// a peer that vanished without a FIN: TCP keepalive and `TCP_USER_TIMEOUT` on its socket (see
        /// ``DeadPeerDetection``); `nil` leaves the kernel's defaults (hours). Default `nil`.
        public var streamDeadPeerSeconds: Int?
        /// How long a closing connection keeps reading and discarding input after its last response,
        /// so the peer sees the response rather than a reset. Default 2 s.
        public var lingerTimeout: Duration = .seconds(2)
        /// The largest batch a streaming response buffers before it reports not writable, in bytes.
        /// Default 256 KiB.
        public var highWatermarkBytes: Int = 256 * 1024
        /// The high watermark a stream starts with and falls back to while its reader lags, in bytes.
        /// Default 4 KiB.
        public var minimumHighWatermarkBytes: Int = 4 * 1024
        /// The buffered bytes at or below which a not-writable stream becomes writable again (capped at
        /// half the current high watermark), in bytes. Default 1 KiB.
        public var lowWatermarkBytes: Int = 1024
        /// Whether the high watermark adapts to how fast the reader drains (see the type's discussion).
        /// Default `true`.
        public var adaptsHighWatermarkToReader: Bool = true
        /// Serve HTTPS: each new connection takes the context's ``TLSReloadableContext/current`` and runs
        /// a ``TLSEngine`` between the socket and the parser (see `Connection+TLS.swift`), so a reload applies
        /// to the connections that start after it. Default `nil`: plain HTTP.
        public var tls: TLSReloadableContext?
        /// How long a TLS connection may take from its accept to a completed handshake; then it is closed.
        /// Default 10 s. Ignored without ``tls``.
        public var tlsHandshakeTimeout: Duration = .seconds(10)
        /// Called on a connection's loop when a TLS handshake completes (with what it agreed on) or fails
        /// (with why), for metrics and logs; keep it cheap. Default `nil`.
        public var tlsEvents: (@Sendable (TLSEvent) -> Void)?
        /// Methods the server hands to the handler; any other gets `501 Not Implemented`. Default: GET,
        /// HEAD, POST, PUT, DELETE, OPTIONS, PATCH (CONNECT and TRACE are not served).
        public var supportedMethods: Set<Method> = [.get, .head, .post, .put, .delete, .options, .patch]

        /// Creates the default configuration.
        public init() {}

        /// Creates the default configuration listening on `host:port`.
        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }
    }
}

extension Duration {
    /// Whole nanoseconds, saturating at 0 and `UInt64.max`.
    var clampedNanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return 0 }
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return .max }
        let (total, sumOverflow) = whole.addingReportingOverflow(UInt64(max(0, attoseconds / 1_000_000_000)))
        return sumOverflow ? .max : total
    }
}

/// What happened to a TLS connection's handshake, for ``Server/Configuration/tlsEvents``.
///
/// **Ownership:** A value.
/// **Thread safety:** Value type; not shared.
public enum TLSEvent: Sendable {
    /// A handshake completed.
    case handshakeCompleted(TLSSessionInfo)
    /// A handshake failed: bytes that are not TLS, a refused offer, an alert.
    case handshakeFailed(TLSFailure)
    /// A handshake did not complete within ``Server/Configuration/tlsHandshakeTimeout``.
    case handshakeTimedOut
    /// The connection closed before its handshake completed, failed or timed out: the peer left (a client that
    /// refused the certificate and reset the connection before its alert could be read), or the server shut down.
    case handshakeAbandoned
    /// A connection whose handshake had completed closed (for gauges of the open connections' protocol and cipher).
    case connectionClosed(TLSSessionInfo)
}
