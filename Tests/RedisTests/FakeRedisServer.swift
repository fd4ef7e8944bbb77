import Foundation
import Glibc
import RESP
import TestSupport

/// A scripted stand-in for Redis on a loopback port, for the replies a real server never sends: malformed,
/// truncated, huge, late or missing ones.
///
/// A thread accepts connections one at a time and runs the next script on each (the last script again when they
/// run out). A script reads the client's commands and writes whatever bytes it likes, every read and write with a
/// deadline, so a script cannot hang the test: when a deadline passes it gives up and the connection is closed.
///
/// **Ownership:** The test owns it and calls ``stop()`` (deinit does too); the accept thread holds the listener and
/// the current connection, and ends once stopped.
/// **Thread safety:** `connections` and `stopped` are behind a `TestBox`; scripts run on the accept thread.
final class FakeRedisServer: Sendable {
    /// One accepted connection, as a script sees it.
    final class Peer {
        let fd: Int32
        private var parser = RESPParser()
        /// Whether the client closed its side.
        private(set) var clientClosed = false

        init(fd: Int32) {
            self.fd = fd
        }

        /// The next command the client sent (its arguments as text), or nil when the client closed or the deadline
        /// passed.
        func readCommand(timeout: Duration = .seconds(5)) -> [String]? {
            let deadline = ContinuousClock.now + TestTiming.scaled(timeout)
            while true {
                if let value = try? parser.next() {
                    return value.elements?.map { $0.string ?? "" }
                }
                guard readSome(until: deadline) else { return nil }
            }
        }

        /// Reads the handshake (`HELLO`, then `SELECT` or `CLIENT SETNAME` if sent) and answers it as Redis 7 would,
        /// briefly. Returns false when the client did not send it.
        func handshake(timeout: Duration = .seconds(5)) -> Bool {
            guard let hello = readCommand(timeout: timeout), hello.first?.uppercased() == "HELLO" else { return false }
            write("%1\r\n$5\r\nproto\r\n:3\r\n")
            return true
        }

        /// Writes `text`; false when the client is gone or the deadline passed.
        @discardableResult
        func write(_ text: String, timeout: Duration = .seconds(5)) -> Bool {
            write(Array(text.utf8), timeout: timeout)
        }

        /// Writes `bytes`; false when the client is gone or the deadline passed.
        @discardableResult
        func write(_ bytes: [UInt8], timeout: Duration = .seconds(5)) -> Bool {
            let deadline = ContinuousClock.now + TestTiming.scaled(timeout)
            var sent = 0
            while sent < bytes.count {
                let count = bytes.withUnsafeBytes { buffer in
                    Glibc.send(fd, buffer.baseAddress! + sent, buffer.count - sent, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
                }
                if count > 0 {
                    sent += count
                    continue
                }
                if count < 0 && (errno == EAGAIN || errno == EINTR) {
                    guard wait(events: Int16(POLLOUT), until: deadline) else { return false }
                    continue
                }
                return false
            }
            return true
        }

        /// Holds the connection without reading until `release` fires or the deadline passes. (A client that closes
        /// with commands unsent cannot be seen to close: its FIN waits behind them.)
        func holdWithoutReading(until release: TestSignal, timeout: Duration = .seconds(10)) {
            _ = release.wait(timeout: timeout)
        }

        /// Waits until the client closes the connection (reading and dropping what it sends); false when the
        /// deadline passes first.
        func waitForClose(timeout: Duration = .seconds(5)) -> Bool {
            let deadline = ContinuousClock.now + TestTiming.scaled(timeout)
            while !clientClosed {
                guard readSome(until: deadline) else { return clientClosed }
            }
            return true
        }

        private func readSome(until deadline: ContinuousClock.Instant) -> Bool {
            guard !clientClosed, wait(events: Int16(POLLIN), until: deadline) else { return false }
            var chunk = [UInt8](repeating: 0, count: 16384)
            let count = chunk.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count > 0 {
                parser.append(chunk[0..<count])
                return true
            }
            if count < 0 && (errno == EAGAIN || errno == EINTR) { return true }
            clientClosed = true
            return false
        }

        private func wait(events: Int16, until deadline: ContinuousClock.Instant) -> Bool {
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else { return false }
            let (seconds, attoseconds) = remaining.components
            let milliseconds = Int32(min(60_000, seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1))
            var descriptor = pollfd(fd: fd, events: events, revents: 0)
            return Glibc.poll(&descriptor, 1, milliseconds) > 0
        }
    }

    typealias Script = @Sendable (Peer) -> Void

    let port: Int
    private let listener: Int32
    private let state = TestBox<(accepted: Int, stopped: Bool)>((0, false))
    private let finished = TestSignal()

    /// Listens on a free loopback port and serves `scripts`, in order, to the connections it accepts.
    init(scripts: [Script]) throws {
        let (fd, port) = try LoopbackListener.open()
        listener = fd
        self.port = port
        let state = state
        let finished = finished
        let thread = Thread {
            var index = 0
            // Bounded: at most 100 connections, and each accept waits at most 30 s (a test ends well before).
            while index < 100 {
                var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                let ready = Glibc.poll(&descriptor, 1, 100)
                if state.value.stopped { break }
                guard ready > 0 else { continue }
                let client = LoopbackListener.accept(fd)
                guard client >= 0 else { continue }
                state.update { $0.accepted += 1 }
                let script = scripts[min(index, scripts.count - 1)]
                script(Peer(fd: client))
                close(client)
                index += 1
            }
            finished.signal()
        }
        thread.start()
    }

    deinit {
        stop()
    }

    /// How many connections were accepted so far.
    var accepted: Int { state.value.accepted }

    /// Stops accepting and waits for the thread to end (its current script runs to its deadlines).
    func stop() {
        let wasStopped = state.update { state -> Bool in
            defer { state.stopped = true }
            return state.stopped
        }
        guard !wasStopped else { return }
        _ = finished.wait(timeout: .seconds(30))
        close(listener)
    }
}
