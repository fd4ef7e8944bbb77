/// An incremental HTTP/1.x request parser: append the bytes read from a connection, then pull events.
///
/// It knows nothing of sockets or clocks. Feed bytes with ``append(_:)-(UnsafeRawBufferPointer)`` in whatever pieces
/// they arrive, and call ``next()`` until it returns ``ParseEvent/needMoreData``. Each request gives `.head`, any
/// number of `.body` slices (streamed as the bytes arrive), and `.end`. Bytes after one request stay buffered and
/// the call after `.end` starts on the next pipelined request. After an error the parser stays failed: every later
/// ``next()`` throws the same error, and the connection should answer ``ParseError/status`` and close.
///
/// Framing rules (RFC 9112): lines end in CRLF only (a bare LF is ``ParseError/bareLineFeed``, see
/// ``ParserStateMachine``); `Content-Length` with `Transfer-Encoding`, differing `Content-Length` values, and any
/// transfer coding but a single `chunked` are rejected; identical repeated `Content-Length` values are accepted;
/// obsolete line folding is rejected; a request without either has no body.
///
/// The parser does not bound its own buffer: the connection stops reading while ``bufferedByteCount`` is high.
///
/// **Ownership:** Owned by one connection for its lifetime.
/// **Thread safety:** Value type; not shared.
public struct RequestParser: Sendable {
    /// Limits the parser enforces, each with the status its violation is answered with.
    ///
    /// **Ownership:** A value; copied into the parser.
    /// **Thread safety:** Value type; not shared.
    public struct Configuration: Sendable, Equatable {
        /// Longest request line, in bytes, not counting its CRLF (empty lines before it count too).
        /// Default 8192. Exceeding it is ``ParseError/requestLineTooLong(limit:)`` (414).
        public var maxRequestLineBytes: Int
        /// Longest header section after the request line, in bytes, including every CRLF and the final empty
        /// line. Also bounds a chunked trailer section. Default 16384. Exceeding it is
        /// ``ParseError/headerTooLarge(limit:)`` (431).
        public var maxHeaderBytes: Int
        /// Most field lines in a header (or trailer) section. Default 100. Exceeding it is
        /// ``ParseError/tooManyHeaders(limit:)`` (431).
        public var maxHeaderCount: Int
        /// Largest body, in bytes, declared by `Content-Length` or announced by chunk sizes. Default 1 MiB
        /// (1048576). Exceeding it is ``ParseError/bodyTooLarge(limit:)`` (413).
        public var maxBodyBytes: Int
        /// Longest chunk-size line (size, whitespace and chunk extensions), in bytes, not counting its CRLF.
        /// Default 4096. Exceeding it is ``ParseError/chunkLineTooLong(limit:)`` (400).
        public var maxChunkLineBytes: Int
        /// Whether an HTTP/1.1 request without `Host` is rejected with ``ParseError/missingHost`` (400), as
        /// RFC 9112 §3.2 requires. Default true. More than one `Host` (``ParseError/multipleHosts``) and a `Host`
        /// whose value is not a host with an optional port (``ParseError/invalidHost(_:)``, see ``HostField``) are
        /// always rejected.
        public var requiresHost: Bool

        /// Creates a configuration; every argument defaults to the value documented on its property, and a
        /// negative limit counts as zero.
        public init(
            maxRequestLineBytes: Int = 8192,
            maxHeaderBytes: Int = 16384,
            maxHeaderCount: Int = 100,
            maxBodyBytes: Int = 1 << 20,
            maxChunkLineBytes: Int = 4096,
            requiresHost: Bool = true
        ) {
            self.maxRequestLineBytes = max(0, maxRequestLineBytes)
            self.maxHeaderBytes = max(0, maxHeaderBytes)
            self.maxHeaderCount = max(0, maxHeaderCount)
            self.maxBodyBytes = max(0, maxBodyBytes)
            self.maxChunkLineBytes = max(0, maxChunkLineBytes)
            self.requiresHost = requiresHost
        }
    }

    /// The limits this parser enforces.
    public let configuration: Configuration

    private var machine: ParserStateMachine
    /// Received bytes; those before `readIndex` are consumed.
    private var storage: [UInt8] = []
    private var readIndex = 0

    /// Creates a parser waiting for the first request.
    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
        machine = ParserStateMachine(configuration: configuration)
    }

    /// Bytes appended but not yet consumed by an event: a partial request or pipelined requests not yet parsed.
    public var bufferedByteCount: Int { storage.count &- readIndex }

    /// Whether the parser is between requests with nothing buffered.
    public var isIdle: Bool { bufferedByteCount == 0 && machine.isAwaitingRequest }

    /// Appends bytes read from the connection.
    ///
    /// - Complexity: Amortized O(n) in `bytes.count`; the buffer is compacted only once the consumed prefix
    ///   is at least half of it.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        compact()
        bytes.withMemoryRebound(to: UInt8.self) { storage.append(contentsOf: $0) }
    }

    /// Appends bytes read from the connection.
    ///
    /// - Complexity: Amortized O(n) in `bytes.count`.
    public mutating func append<C: Collection>(_ bytes: C) where C.Element == UInt8 {
        guard !bytes.isEmpty else { return }
        compact()
        storage.append(contentsOf: bytes)
    }

    /// Parses as far as the next event.
    ///
    /// - Returns: `.needMoreData` when every buffered byte is used, otherwise the next head, body slice or end.
    /// - Throws: The ``ParseError`` that makes the request unparseable; every later call throws it again.
    public mutating func next() throws(ParseError) -> ParseEvent {
        let bytes = storage
        let start = readIndex
        let action = try bytes.withUnsafeBufferPointer { buffer throws(ParseError) in
            try machine.advance(over: UnsafeBufferPointer(rebasing: buffer[start...]))
        }
        switch action {
        case .needMoreData(let consumed):
            readIndex &+= consumed
            return .needMoreData
        case .head(let head, let consumed):
            readIndex &+= consumed
            return .head(head)
        case .body(let offset, let count):
            let bodyStart = start &+ offset
            readIndex = bodyStart &+ count
            return .body(bytes[bodyStart..<readIndex])
        case .end(let trailers, let consumed):
            readIndex &+= consumed
            return .end(trailers: trailers)
        }
    }

    /// Drops the consumed prefix when that is cheap or worth it.
    private mutating func compact() {
        guard readIndex > 0 else { return }
        if readIndex == storage.count {
            storage.removeAll(keepingCapacity: true)
            readIndex = 0
        } else if readIndex >= storage.count &>> 1 {
            storage.removeSubrange(0..<readIndex)
            readIndex = 0
        }
    }
}
