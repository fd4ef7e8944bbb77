import Foundation
import Glibc
import TestSupport

/// A stand-in for Redis on a loopback port that answers the handshake and the subscriptions like Redis 7, and every
/// script call (`EVAL`, `EVALSHA`, `FCALL`) with the next of `badReplies` (malformed, truncated, huge, or well-formed
/// but of the wrong shape), then closes that connection.
///
/// Each accepted connection is served on a thread of its own, so the publishing connection and the subscription
/// connections of one replica can all be open at once. Every read waits at most 200 ms before it looks whether the
/// fake was stopped, and at most 60 connections are served: nothing here can outlive the test for long.
///
/// **Ownership:** The test owns it and calls ``stop()`` (deinit does too).
/// **Thread safety:** Shared counters behind `TestBox`es; each connection's bytes are its thread's own.
final class MisbehavingRedis: Sendable {
    let port: Int
    private let listener: Int32
    private let badReplies: [[UInt8]]
    private let state = TestBox<(connections: Int, scriptCalls: Int, stopped: Bool, commands: [String])>(
        (0, 0, false, [])
    )
    private let acceptorDone = TestSignal()

    init(badReplies: [[UInt8]]) throws {
        self.badReplies = badReplies
        (listener, port) = try LoopbackListener.open()
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    deinit {
        stop()
    }

    /// Script calls answered so far.
    var scriptCalls: Int { state.value.scriptCalls }

    /// Connections accepted so far.
    var connections: Int { state.value.connections }

    /// The names of the commands received so far, in order.
    var commands: [String] { state.value.commands }

    /// Stops accepting; the connection threads end at their next read.
    func stop() {
        let wasStopped = state.update { state -> Bool in
            defer { state.stopped = true }
            return state.stopped
        }
        guard !wasStopped else { return }
        _ = acceptorDone.wait(timeout: .seconds(10))
        close(listener)
    }

    private var isStopped: Bool { state.value.stopped }

    private func acceptLoop() {
        defer { acceptorDone.signal() }
        var served = 0
        while served < 60 && !isStopped {
            var descriptor = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard Glibc.poll(&descriptor, 1, 100) > 0, !isStopped else { continue }
            let client = LoopbackListener.accept(listener)
            guard client >= 0 else { continue }
            served += 1
            state.update { $0.connections += 1 }
            Thread { [self] in
                serve(client)
                close(client)
            }.start()
        }
    }

    // MARK: - One connection

    private func serve(_ fd: Int32) {
        var input: [UInt8] = []
        // Bounded: ends when the client closes, the fake is stopped, or after 100 000 reads.
        for _ in 0..<100_000 {
            while let command = Self.takeCommand(&input) {
                let name = command.first?.uppercased() ?? ""
                state.update { $0.commands.append(name) }
                let (reply, thenClose) = answer(command)
                guard write(fd, reply), !thenClose else { return }
            }
            if isStopped { return }
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = Glibc.poll(&descriptor, 1, 200)
            if ready <= 0 { continue }
            var chunk = [UInt8](repeating: 0, count: 16_384)
            let count = chunk.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return }
            input += chunk[0..<count]
        }
    }

    /// The reply to `command`, and whether the connection closes after it (after a bad one).
    private func answer(_ command: [String]) -> (reply: [UInt8], thenClose: Bool) {
        let name = command.first?.uppercased() ?? ""
        switch name {
        case "HELLO":
            return (Array("%1\r\n$5\r\nproto\r\n:3\r\n".utf8), false)
        case "PING":
            return (Array("+PONG\r\n".utf8), false)
        case "SUBSCRIBE", "SSUBSCRIBE", "PSUBSCRIBE":
            var reply = ""
            for (index, channel) in command.dropFirst().enumerated() {
                let kind = name.lowercased()
                reply +=
                    ">3\r\n$\(kind.utf8.count)\r\n\(kind)\r\n$\(channel.utf8.count)\r\n\(channel)\r\n:\(index + 1)\r\n"
            }
            return (Array(reply.utf8), false)
        case "UNSUBSCRIBE", "SUNSUBSCRIBE", "PUNSUBSCRIBE":
            var reply = ""
            for channel in command.dropFirst() {
                let kind = name.lowercased()
                reply += ">3\r\n$\(kind.utf8.count)\r\n\(kind)\r\n$\(channel.utf8.count)\r\n\(channel)\r\n:0\r\n"
            }
            return (Array(reply.utf8), false)
        case "SCRIPT" where command.count > 1 && command[1].uppercased() == "LOAD":
            return (Array("$40\r\n\(String(repeating: "ab", count: 20))\r\n".utf8), false)
        case "EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL":
            let index = state.update { state -> Int in
                defer { state.scriptCalls += 1 }
                return state.scriptCalls
            }
            return (badReplies.isEmpty ? [] : badReplies[index % badReplies.count], true)
        case "CLIENT", "SELECT", "AUTH":
            return (Array("+OK\r\n".utf8), false)
        default:
            // Reads of a Redis that holds nothing.
            return (Array("_\r\n".utf8), false)
        }
    }

    /// Writes all of `bytes` (blocking; the client reads them or goes); false when the client is gone.
    private func write(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let count = bytes.withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL))
            }
            if count > 0 {
                sent += count
            } else if count < 0 && errno == EINTR {
                continue
            } else {
                return false
            }
        }
        return true
    }

    /// Takes one complete command (`*N` of `$len` bulk strings) off the front of `input`; nil when it is incomplete.
    static func takeCommand(_ input: inout [UInt8]) -> [String]? {
        var index = 0
        func line() -> String? {
            var end = index
            while end + 1 < input.count {
                if input[end] == 13 && input[end + 1] == 10 {
                    let text = String(decoding: input[index..<end], as: UTF8.self)
                    index = end + 2
                    return text
                }
                end += 1
            }
            return nil
        }
        guard let header = line(), header.hasPrefix("*"), let count = Int(header.dropFirst()), count >= 0,
            count < 1_000_000
        else { return nil }
        var arguments: [String] = []
        for _ in 0..<count {
            guard let lengthLine = line(), lengthLine.hasPrefix("$"), let length = Int(lengthLine.dropFirst()),
                length >= 0, index + length + 2 <= input.count
            else { return nil }
            arguments.append(String(decoding: input[index..<(index + length)], as: UTF8.self))
            index += length + 2
        }
        input.removeFirst(index)
        return arguments
    }
}
