import Foundation
import Glibc
import Reactive
import Synchronization
import TestSupport

/// A JWK Set served over loopback HTTP: every request gets the current document (``serve(_:)`` swaps it, so keys can
/// be rotated), or a status other than 200; the requests are counted.
///
/// One thread accepts; each connection reads one request head, writes the answer with `Connection: close` and
/// closes. ``stop()`` ends the thread.
///
/// **Thread safety:** safe to use from any thread.
final class JWKSServer: Sendable {
    private struct State {
        var document = ""
        var status = 200
        var requests = 0
    }

    let port: Int
    private let listener: Int32
    // LockedState, not Mutex: ThreadSanitizer cannot see Synchronization.Mutex on Linux.
    private let state = LockedState(State())
    private let stopped = Atomic<Bool>(false)

    init(_ document: String) throws {
        (listener, port) = try LoopbackListener.open(backlog: 64)
        state.withLock { $0.document = document }
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    var url: String { "http://127.0.0.1:\(port)/.well-known/jwks.json" }

    /// Requests answered so far.
    var requests: Int { state.withLock { $0.requests } }

    /// Serves `document` from now on, with `status`.
    func serve(_ document: String, status: Int = 200) {
        state.withLock {
            $0.document = document
            $0.status = status
        }
    }

    func stop() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        shutdown(listener, Int32(SHUT_RDWR))
    }

    private func acceptLoop() {
        LoopbackListener.acceptUntil(listener, stopped: { stopped.load(ordering: .relaxed) }) { fd in
            Thread.detachNewThread { [self] in answer(fd) }
        }
    }

    private func answer(_ fd: Int32) {
        defer { close(fd) }
        var head: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !head.contains(sequence: [13, 10, 13, 10]) {
            var look = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&look, 1, 5_000) > 0 else { return }
            let count = read(fd, &buffer, buffer.count)
            guard count > 0 else { return }
            head += buffer[0..<count]
        }
        let (document, status) = state.withLock { state in
            state.requests += 1
            return (state.document, state.status)
        }
        let body = Array(document.utf8)
        let response =
            "HTTP/1.1 \(status) \(status == 200 ? "OK" : "Error")\r\nContent-Type: application/jwk-set+json\r\n"
            + "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        let bytes = Array(response.utf8) + body
        var sent = 0
        while sent < bytes.count {
            let written = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { return }
            sent += written
        }
    }
}

extension Array where Element == UInt8 {
    fileprivate func contains(sequence: [UInt8]) -> Bool {
        guard count >= sequence.count else { return false }
        return (0...(count - sequence.count)).contains { Array(self[$0..<($0 + sequence.count)]) == sequence }
    }
}
