import Foundation
import Glibc
import OpenSSL
import TestSupport

/// One TLS connection served by a server ``TLSEngine`` over a real loopback socket, on a thread of its own with
/// blocking calls bounded by a deadline: the harness that lets real clients (Python's `ssl`, `openssl s_client`)
/// talk to an engine before the event loops do.
///
/// It accepts one connection on `127.0.0.1`, runs the handshake, reads plaintext until a line ends, answers
/// `echo: <line>`, and then either sends close_notify itself (`closeAfterEcho`) or waits for the client's and
/// answers it. What happened is in the ``Outcome``.
///
/// **Ownership:** The test owns it; the thread ends by the deadline at the latest and closes both sockets.
/// **Thread safety:** ``wait(timeout:)`` from the test's thread; the outcome is behind a lock.
final class LoopbackTLSServer: Sendable {
    /// What the connection did.
    struct Outcome: Sendable {
        var session: TLSSessionInfo?
        var failure: TLSFailure?
        var received: [UInt8] = []
        var receivedCloseNotify = false
        /// How the serving ended, when not by a TLS close or failure ("eof", "deadline", a socket error).
        var note: String?
    }

    let port: Int
    private let outcome = TestBox(Outcome())
    private let done = TestSignal()

    init(context: TLSContext, closeAfterEcho: Bool, timeout: Duration = .seconds(10)) throws {
        let (listener, port) = try LoopbackListener.open(backlog: 1)
        self.port = port
        let engine = try context.makeServerEngine()
        let deadline = ContinuousClock.now + TestTiming.scaled(timeout)
        let thread = Thread { [outcome, done] in
            let result = Self.serve(listener: listener, engine: engine, closeAfterEcho: closeAfterEcho, until: deadline)
            close(listener)
            outcome.update { $0 = result }
            done.signal()
        }
        thread.start()
    }

    /// The outcome once the connection is over; nil if it is not over within `timeout`.
    func wait(timeout: Duration = .seconds(15)) -> Outcome? {
        done.wait(timeout: timeout) ? outcome.value : nil
    }

    private static func serve(
        listener: Int32,
        engine: TLSEngine,
        closeAfterEcho: Bool,
        until deadline: ContinuousClock.Instant
    ) -> Outcome {
        var result = Outcome()
        func remainingMilliseconds() -> Int32 {
            let left = deadline - ContinuousClock.now
            return left <= .zero ? 0 : Int32(clamping: left.components.seconds * 1000 + 1)
        }
        var waiting = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
        guard poll(&waiting, 1, remainingMilliseconds()) > 0 else {
            result.note = "no client connected"
            return result
        }
        let connection = LoopbackListener.accept(listener)
        guard connection >= 0 else {
            result.note = "accept failed: errno \(errno)"
            return result
        }
        defer { close(connection) }

        /// Sends all the engine's output (blocking).
        func flush() -> Bool {
            while engine.pendingOutputCount > 0 {
                let bytes = engine.takeOutput(maxCount: 16384)
                var offset = 0
                while offset < bytes.count {
                    let sent = bytes[offset...].withUnsafeBytes {
                        send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
                    }
                    guard sent > 0 else { return false }
                    offset += sent
                }
            }
            return true
        }

        var input = [UInt8](repeating: 0, count: 16384)
        var plaintext = [UInt8](repeating: 0, count: 4096)
        var echoed = false
        while ContinuousClock.now < deadline {
            if engine.session == nil {
                switch engine.handshake() {
                case .failed(let failure):
                    result.failure = failure
                    _ = flush()  // the alert
                    return result
                case .complete(let session):
                    result.session = session
                case .wantInput, .outputFull:
                    break
                }
            }
            if engine.session != nil {
                reading: while true {
                    switch plaintext.withUnsafeMutableBytes({ engine.read(into: $0) }) {
                    case .bytes(let count):
                        result.received.append(contentsOf: plaintext[..<count])
                        if !echoed, let end = result.received.firstIndex(of: UInt8(ascii: "\n")) {
                            echoed = true
                            let answer = Array("echo: ".utf8) + result.received[...end]
                            guard case .wrote(answer.count) = engine.write(answer) else {
                                result.note = "the echo was not written whole"
                                return result
                            }
                            if closeAfterEcho {
                                _ = engine.shutdown()
                                _ = flush()
                                return result
                            }
                        }
                    case .wantInput:
                        break reading
                    case .outputFull:
                        guard flush() else { return result }
                    case .closed:
                        result.receivedCloseNotify = true
                        _ = engine.shutdown()
                        _ = flush()
                        return result
                    case .failed(let failure):
                        result.failure = failure
                        _ = flush()
                        return result
                    }
                }
            }
            guard flush() else {
                result.note = "send failed: errno \(errno)"
                return result
            }
            var readable = pollfd(fd: connection, events: Int16(POLLIN), revents: 0)
            let ready = poll(&readable, 1, min(remainingMilliseconds(), 1000))
            guard ready > 0 else { continue }
            let count = input.withUnsafeMutableBytes {
                read(connection, $0.baseAddress, min($0.count, engine.inputCapacity))
            }
            if count == 0 {
                result.note = "eof"
                return result
            }
            if count < 0 {
                if errno == EINTR { continue }
                result.note = "read failed: errno \(errno)"
                return result
            }
            engine.feed(input[..<count])
        }
        result.note = "deadline"
        return result
    }
}
