import Foundation
import Glibc
import Reactive
import Synchronization
import TestSupport

/// An upstream on raw loopback sockets that answers every request with a body that does not end: bodies
/// the service's own HTTP server cannot send (one delimited only by the close of the connection), and a
/// count of what it sent and of the connections still open, seen from the upstream's side.
///
/// One thread accepts; each connection has a thread that reads the request head and then writes until
/// the client closes the connection (a write fails, or a poll sees the close), a minute passes, or
/// `maxBytesPerConnection` went out. ``stop()`` ends them all.
///
/// **Thread safety:** safe to use from any thread.
final class RawUpstream: Sendable {
    /// What every response is.
    enum Body: Sendable {
        /// `200` with no length and `Connection: close`: the body ends only with the connection.
        case endlessCloseDelimited
        /// `200`, chunked, 64 KiB chunks without a last one.
        case endlessChunked
        /// `200` with a `Content-Length` of 100 bytes, one byte every `interval`.
        case trickle(interval: Duration)
    }

    struct Snapshot: Sendable {
        /// Connections accepted.
        var accepted = 0
        /// Connections the client has not closed yet.
        var open = 0
        /// Body bytes handed to the kernel.
        var bytesSent = 0
    }

    let port: Int
    private let listener: Int32
    private let body: Body
    private let maxBytesPerConnection: Int
    // LockedState, not Mutex: ThreadSanitizer cannot see Synchronization.Mutex on Linux.
    private let state = LockedState(Snapshot())
    private let stopped = Atomic<Bool>(false)

    init(_ body: Body, maxBytesPerConnection: Int = 8 << 30) throws {
        (listener, port) = try LoopbackListener.open(backlog: 64)
        self.body = body
        self.maxBytesPerConnection = maxBytesPerConnection
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    var snapshot: Snapshot { state.withLock { $0 } }

    /// Stops accepting and ends every connection at its next write or look.
    func stop() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        shutdown(listener, Int32(SHUT_RDWR))
    }

    private func acceptLoop() {
        LoopbackListener.acceptUntil(listener, stopped: { stopped.load(ordering: .relaxed) }) { fd in
            state.withLock {
                $0.accepted += 1
                $0.open += 1
            }
            Thread.detachNewThread { [self] in serve(fd) }
        }
    }

    private func serve(_ fd: Int32) {
        defer {
            close(fd)
            state.withLock { $0.open -= 1 }
        }
        guard readHead(fd) else { return }
        let giveUp = ContinuousClock.now + .seconds(60)
        switch body {
        case .endlessCloseDelimited, .endlessChunked:
            let chunked = if case .endlessChunked = body { true } else { false }
            let head =
                chunked
                ? "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                : "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
            guard send(fd, Array(head.utf8)) else { return }
            let filler = [UInt8](repeating: UInt8(ascii: "1"), count: 64 * 1024)
            let chunk = chunked ? Array("10000\r\n".utf8) + filler + Array("\r\n".utf8) : filler
            var sent = 0
            while sent < maxBytesPerConnection, ContinuousClock.now < giveUp, !stopped.load(ordering: .relaxed) {
                guard send(fd, chunk) else { return }
                sent += filler.count
                state.withLock { $0.bytesSent += filler.count }
            }
        case .trickle(let interval):
            let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
            guard send(fd, Array(head.utf8)) else { return }
            let milliseconds = Int32(min(60_000, max(1, interval / .milliseconds(1))))
            for _ in 0..<100 where ContinuousClock.now < giveUp && !stopped.load(ordering: .relaxed) {
                // Waits out the interval, unless the client closes first.
                var look = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                if poll(&look, 1, milliseconds) > 0 { return }
                guard send(fd, [UInt8(ascii: "1")]) else { return }
                state.withLock { $0.bytesSent += 1 }
            }
        }
    }

    /// Reads until the end of the request head; `false` if the client went first.
    private func readHead(_ fd: Int32) -> Bool {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while received.count < 65_536 {
            let count = recv(fd, &buffer, buffer.count, 0)
            guard count > 0 else { return false }
            received += buffer[..<count]
            if String(decoding: received, as: UTF8.self).contains("\r\n\r\n") { return true }
        }
        return false
    }

    /// Writes all of `bytes`; `false` once the client has gone (or the upstream is stopping).
    private func send(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            guard !stopped.load(ordering: .relaxed) else { return false }
            // Waits up to 100 ms for room, so a stop is noticed even when the client reads nothing.
            var look = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            guard poll(&look, 1, 100) >= 0 else { return false }
            if look.revents & Int16(POLLERR | POLLHUP) != 0 { return false }
            guard look.revents & Int16(POLLOUT) != 0 else { continue }
            let written = bytes[offset...].withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            }
            if written < 0 {
                if errno == EAGAIN || errno == EINTR { continue }
                return false
            }
            offset += written
        }
        return true
    }
}
