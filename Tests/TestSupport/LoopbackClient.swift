import Dispatch
import Glibc

/// A raw-socket HTTP test client for loopback servers: send arbitrary bytes, read with deadlines,
/// read slowly or not at all.
///
/// Every read takes a timeout (a `poll(2)` deadline), so a test waits on an event, never on a sleep,
/// and a broken server fails the test instead of hanging it. Timeouts are scaled by ``TestTiming``.
///
/// **Ownership:** Owned by the test; closes its socket on ``close()`` or deinit.
///
/// Connecting, sending and reading block the calling thread (each with a deadline): from a test, that
/// must be the test's own thread (see ``OffPoolTrait``), which each of them checks.
///
/// **Thread safety:** Not thread-safe; use from one thread at a time.
public final class LoopbackClient {
    /// What went wrong talking to the server.
    public enum Failure: Error, Equatable, CustomStringConvertible {
        /// No byte (or not the expected ones) arrived before the deadline.
        case timedOut
        /// The server closed the connection before a complete response.
        case closed
        /// A system call failed.
        case system(call: String, errno: Int32)
        /// The response could not be parsed.
        case malformed(String)

        public var description: String {
            switch self {
            case .timedOut: return "timed out"
            case .closed: return "connection closed"
            case .system(let call, let errno): return "\(call) failed: errno \(errno)"
            case .malformed(let why): return "malformed response: \(why)"
            }
        }
    }

    /// A parsed response.
    public struct Response: CustomStringConvertible {
        public var status: Int
        public var reason: String
        public var headers: [(name: String, value: String)]
        public var body: [UInt8]

        /// The first value of `name` (case-insensitive).
        public func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }

        /// The body as UTF-8 text.
        public var text: String { String(decoding: body, as: UTF8.self) }

        public var description: String { "\(status) \(reason) \(headers) \(text)" }
    }

    /// The socket. // Owned.
    public let fd: Int32
    private var buffer: [UInt8] = []
    private var isClosed = false

    /// Connects (blocking) to `host:port`.
    /// - Parameter receiveBufferBytes: If set, `SO_RCVBUF` before connecting (a small window for slow-reader tests).
    public init(port: Int, host: String = "127.0.0.1", receiveBufferBytes: Int? = nil) throws(Failure) {
        OffPool.checkMayBlock("LoopbackClient.connect")
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let info = list?.pointee else {
            throw .system(call: "getaddrinfo", errno: EINVAL)
        }
        defer { freeaddrinfo(list) }
        let fd = socket(info.ai_family, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .system(call: "socket", errno: errno) }
        if let receiveBufferBytes {
            var size = Int32(receiveBufferBytes)
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        guard connect(fd, info.ai_addr, info.ai_addrlen) == 0 else {
            let code = errno
            Glibc.close(fd)
            throw .system(call: "connect", errno: code)
        }
        self.fd = fd
    }

    deinit {
        close()
    }

    /// Closes the socket (idempotent).
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        Glibc.close(fd)
    }

    /// Closes the sending side only.
    public func shutdownWrite() {
        Glibc.shutdown(fd, Int32(SHUT_WR))
    }

    /// Sends all of `bytes` (blocking).
    public func send(_ bytes: [UInt8]) throws(Failure) {
        OffPool.checkMayBlock("LoopbackClient.send")
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            }
            if sent < 0 {
                if errno == EINTR { continue }
                throw .system(call: "send", errno: errno)
            }
            offset += sent
        }
    }

    /// Sends the UTF-8 bytes of `text`.
    public func send(_ text: String) throws(Failure) {
        try send(Array(text.utf8))
    }

    /// Sends a `GET` for `path` with a `Host` header and any extra header lines.
    public func sendGet(_ path: String, headers: [String] = []) throws(Failure) {
        var request = "GET \(path) HTTP/1.1\r\nHost: localhost\r\n"
        for line in headers { request += line + "\r\n" }
        try send(request + "\r\n")
    }

    /// Waits up to `timeout` for bytes and returns what one `read(2)` gave (empty at EOF).
    public func readSome(atMost maximum: Int = 65_536, timeout: Duration = .seconds(5)) throws(Failure) -> [UInt8] {
        return try readSome(atMost: maximum, exactly: TestTiming.scaled(timeout))
    }

    /// As ``readSome(atMost:timeout:)``, but waits `timeout` as given, not scaled by ``TestTiming``: for a caller
    /// that keeps its own clock (a protocol machine's timer), where a longer wait would change what the test sees.
    public func readSome(atMost maximum: Int = 65_536, exactly timeout: Duration) throws(Failure) -> [UInt8] {
        if !buffer.isEmpty {
            let taken = Array(buffer.prefix(maximum))
            buffer.removeFirst(taken.count)
            return taken
        }
        return try readFromSocket(atMost: maximum, timeout: timeout)
    }

    /// Reads until the server closes the connection or `timeout` passes; returns everything read.
    public func readUntilClosed(timeout: Duration = .seconds(5)) throws(Failure) -> [UInt8] {
        try readUntilClosed(until: LoopbackClient.deadline(after: timeout))
    }

    private func readUntilClosed(until deadline: UInt64) throws(Failure) -> [UInt8] {
        var all = buffer
        buffer = []
        while true {
            let chunk = try readFromSocket(atMost: 65_536, timeout: .nanoseconds(remaining(until: deadline)))
            if chunk.isEmpty { return all }
            all += chunk
        }
    }

    /// Whether the server closes the connection (EOF or reset) within `timeout`, discarding any bytes.
    public func waitForClose(timeout: Duration = .seconds(5)) -> Bool {
        do {
            _ = try readUntilClosed(timeout: timeout)
            return true
        } catch .system(call: "read", errno: _) {
            return true  // a reset is a close too
        } catch {
            return false
        }
    }

    /// Reads exactly one response (Content-Length, chunked or until close), leaving any bytes after it
    /// buffered for the next call.
    /// - Parameter isHead: The request was `HEAD`: the response has no body whatever its headers say.
    public func readResponse(timeout: Duration = .seconds(5), isHead: Bool = false) throws(Failure) -> Response {
        let deadline = LoopbackClient.deadline(after: timeout)
        let headEnd = try fill(until: deadline) { LoopbackClient.find([13, 10, 13, 10], in: $0).map { $0 + 4 } }
        let headText = String(decoding: buffer[0..<(headEnd - 4)], as: UTF8.self)
        buffer.removeFirst(headEnd)
        var lines = headText.split(separator: "\r\n" as Character, omittingEmptySubsequences: false).map(String.init)
        let statusLine = lines.removeFirst()
        let parts = statusLine.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]) else {
            throw .malformed("status line \(statusLine)")
        }
        var response = Response(
            status: status,
            reason: parts.count > 2 ? String(parts[2]) : "",
            headers: [],
            body: []
        )
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { throw .malformed("header line \(line)") }
            let value = String(line[line.index(after: colon)...]).trimmingCharacters(in: " \t")
            response.headers.append((String(line[..<colon]), value))
        }
        if isHead || status < 200 || status == 204 || status == 304 { return response }
        if let length = response.header("content-length").flatMap({ Int($0) }) {
            _ = try fill(until: deadline) { $0.count >= length ? length : nil }
            response.body = Array(buffer[0..<length])
            buffer.removeFirst(length)
        } else if response.header("transfer-encoding")?.lowercased() == "chunked" {
            response.body = try readChunkedBody(until: deadline)
        } else {
            response.body = try readUntilClosed(until: deadline)
        }
        return response
    }

    /// Reads one chunk of a chunked body (the decoded bytes; empty for the last chunk), for streaming tests.
    public func readChunk(timeout: Duration = .seconds(5)) throws(Failure) -> [UInt8] {
        let deadline = LoopbackClient.deadline(after: timeout)
        return try readOneChunk(until: deadline)
    }

    private func readChunkedBody(until deadline: UInt64) throws(Failure) -> [UInt8] {
        var body: [UInt8] = []
        while true {
            let chunk = try readOneChunk(until: deadline)
            if chunk.isEmpty { return body }
            body += chunk
        }
    }

    private func readOneChunk(until deadline: UInt64) throws(Failure) -> [UInt8] {
        let lineEnd = try fill(until: deadline) { LoopbackClient.find([13, 10], in: $0).map { $0 + 2 } }
        let sizeText = String(decoding: buffer[0..<(lineEnd - 2)], as: UTF8.self)
        guard let size = Int(sizeText.split(separator: ";")[0], radix: 16) else {
            throw .malformed("chunk size \(sizeText)")
        }
        buffer.removeFirst(lineEnd)
        if size == 0 {
            // Trailer section: lines until an empty one.
            let end = try fill(until: deadline) { bytes in
                if bytes.starts(with: [13, 10]) { return 2 }
                return LoopbackClient.find([13, 10, 13, 10], in: bytes).map { $0 + 4 }
            }
            buffer.removeFirst(end)
            return []
        }
        _ = try fill(until: deadline) { $0.count >= size + 2 ? size + 2 : nil }
        guard buffer[size] == 13, buffer[size + 1] == 10 else { throw .malformed("chunk terminator") }
        let chunk = Array(buffer[0..<size])
        buffer.removeFirst(size + 2)
        return chunk
    }

    /// Reads until `complete` finds what it needs in the buffer, returning its answer.
    private func fill(until deadline: UInt64, _ complete: ([UInt8]) -> Int?) throws(Failure) -> Int {
        while true {
            if let found = complete(buffer) { return found }
            let chunk = try readFromSocket(atMost: 65_536, timeout: .nanoseconds(remaining(until: deadline)))
            if chunk.isEmpty { throw .closed }
            buffer += chunk
        }
    }

    private func readFromSocket(atMost maximum: Int, timeout: Duration) throws(Failure) -> [UInt8] {
        OffPool.checkMayBlock("LoopbackClient read")
        let deadline = DispatchTime.now().uptimeNanoseconds + timeout.nanoseconds
        while true {
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let left = remaining(until: deadline)
            let ready = poll(&descriptor, 1, Int32(clamping: (left + 999_999) / 1_000_000))
            if ready < 0 {
                if errno == EINTR { continue }
                throw .system(call: "poll", errno: errno)
            }
            if ready == 0 {
                if remaining(until: deadline) == 0 { throw .timedOut }
                continue
            }
            var chunk = [UInt8](repeating: 0, count: maximum)
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, maximum) }
            if count < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                throw .system(call: "read", errno: errno)
            }
            return Array(chunk[0..<count])
        }
    }

    /// The uptime at which a wait of `timeout` (scaled by ``TestTiming``) ends.
    private static func deadline(after timeout: Duration) -> UInt64 {
        DispatchTime.now().uptimeNanoseconds &+ TestTiming.scaled(timeout).nanoseconds
    }

    private func remaining(until deadline: UInt64) -> UInt64 {
        let now = DispatchTime.now().uptimeNanoseconds
        return deadline > now ? deadline - now : 0
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count) where haystack[start] == needle[0] {
            if Array(haystack[start..<(start + needle.count)]) == needle { return start }
        }
        return nil
    }
}

extension Duration {
    /// Whole nanoseconds (non-negative durations only).
    fileprivate var nanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        return UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, attoseconds / 1_000_000_000))
    }
}

extension String {
    fileprivate func trimmingCharacters(in characters: String) -> String {
        var scalars = Substring(self)
        while let first = scalars.first, characters.contains(first) { scalars.removeFirst() }
        while let last = scalars.last, characters.contains(last) { scalars.removeLast() }
        return String(scalars)
    }
}
