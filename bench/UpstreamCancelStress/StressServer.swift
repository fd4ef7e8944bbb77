import Dispatch
import Foundation
import Glibc

/// How the stress server frames a response body.
enum BodyFraming: String, CaseIterable, Sendable {
    /// `Content-Length`, connection kept alive.
    case length
    /// `Transfer-Encoding: chunked`, connection kept alive.
    case chunked
    /// No length: the body ends when the server closes the connection.
    case close
}

/// One request's handshake between the client side of an iteration and the server: the server
/// signals `headSent` once the head and the first part of the body are out, then waits for
/// `release` before it writes the rest (the last chunk, the last bytes, or the close).
final class Exchange: Sendable {
    let headSent = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)
    init() {}
}

/// A raw-socket HTTP/1.1 server on 127.0.0.1 for the stress program: a thread per connection,
/// keep-alive for `length` and `chunked`, close-delimited bodies for `close`.
///
/// A request's path is `/ID/FRAMING/SIZE`; the server looks up `ID`'s ``Exchange`` (registered by the
/// client before the request is sent) to split the response around the client's cancel.
///
/// **Thread safety:** `register`/`unregister` from any thread (a lock); connections run on their own threads.
final class StressServer: @unchecked Sendable {
    // @unchecked: `exchanges` is guarded by `lock`; `listener` and `port` are immutable after init.
    private let lock = NSLock()
    private var exchanges: [Int: Exchange] = [:]
    private let listener: Int32
    /// The port bound on 127.0.0.1.
    let port: Int

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw StressError.system("socket", errno) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 512) == 0 else { throw StressError.system("bind/listen", errno) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        listener = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    func register(_ id: Int, _ exchange: Exchange) {
        lock.withLock { exchanges[id] = exchange }
    }

    func unregister(_ id: Int) {
        _ = lock.withLock { exchanges.removeValue(forKey: id) }
    }

    private func exchange(_ id: Int) -> Exchange? {
        lock.withLock { exchanges[id] }
    }

    private func acceptLoop() {
        while true {
            let fd = accept(listener, nil, nil)
            if fd < 0 {
                if errno == EINTR || errno == ECONNABORTED || errno == EMFILE { continue }
                return
            }
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            let thread = Thread { [self] in serve(fd) }
            thread.start()
        }
    }

    /// Answers requests on `fd` until the client closes or a close-delimited body ends.
    private func serve(_ fd: Int32) {
        defer { close(fd) }
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            // Read one request head (GETs only: no body).
            var end: Int?
            while end == nil {
                end = Self.headEnd(buffer)
                if end != nil { break }
                let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if count <= 0 { return }
                buffer.append(contentsOf: chunk[0..<count])
            }
            let head = String(decoding: buffer[0..<end!], as: UTF8.self)
            buffer.removeFirst(end!)
            let parts = head.split(separator: " ", maxSplits: 2)
            guard parts.count >= 2 else { return }
            let path = parts[1].split(separator: "/")
            guard path.count == 3, let id = Int(path[0]), let framing = BodyFraming(rawValue: String(path[1])),
                let size = Int(path[2]), size >= 2, size <= 1 << 20
            else { return }
            let keepOpen = respond(fd, id: id, framing: framing, size: size)
            if !keepOpen { return }
        }
    }

    /// Writes one response in two parts around the exchange's release; false when the connection ends.
    private func respond(_ fd: Int32, id: Int, framing: BodyFraming, size: Int) -> Bool {
        let body = [UInt8](repeating: UInt8(ascii: "x"), count: size)
        let split = size / 2
        var first: [UInt8]
        var rest: [UInt8]
        switch framing {
        case .length:
            first = Array("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: \(size)\r\n\r\n".utf8)
            first += body[0..<split]
            rest = Array(body[split...])
        case .chunked:
            first = Array("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
            first += Array(String(split, radix: 16).utf8) + [13, 10] + body[0..<split] + [13, 10]
            rest = Array(String(size - split, radix: 16).utf8) + [13, 10] + body[split...] + [13, 10]
            rest += Array("0\r\n\r\n".utf8)
        case .close:
            first = Array("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n".utf8)
            first += body[0..<split]
            rest = Array(body[split...])
        }
        let exchange = exchange(id)
        guard Self.sendAll(fd, first) else { return false }
        exchange?.headSent.signal()
        // Bounded: a client that never releases (it gave up) does not hold this thread for ever.
        if let exchange, exchange.release.wait(timeout: .now() + .seconds(10)) == .timedOut { return false }
        guard Self.sendAll(fd, rest) else { return false }
        return framing != .close
    }

    private static func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes {
                send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
            }
            if sent < 0 && errno == EINTR { continue }
            if sent <= 0 { return false }
            offset += sent
        }
        return true
    }

    /// The index just past the head's `\r\n\r\n`, if the buffer holds a whole head.
    private static func headEnd(_ buffer: [UInt8]) -> Int? {
        guard buffer.count >= 4 else { return nil }
        for index in 3..<buffer.count
        where buffer[index] == 10 && buffer[index - 1] == 13 && buffer[index - 2] == 10 && buffer[index - 3] == 13 {
            return index + 1
        }
        return nil
    }
}

enum StressError: Error, CustomStringConvertible {
    case system(String, Int32)

    var description: String {
        switch self {
        case .system(let call, let code): "\(call) failed: errno \(code)"
        }
    }
}
