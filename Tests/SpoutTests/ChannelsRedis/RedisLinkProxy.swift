import Foundation
import Glibc
import TestSupport

/// A loopback TCP relay in front of a Redis, so that a test can cut one replica off Redis while the others keep it.
///
/// ``cut()`` closes every relayed connection and, until ``restore()``, closes each new one as soon as it is
/// accepted (the client sees its connection end during the handshake, and backs off). Each relayed connection runs
/// on a thread of its own that polls both sockets at most 100 ms at a time, so it notices a cut or a stop quickly;
/// at most 200 connections are accepted.
///
/// **Ownership:** The test owns it and calls ``stop()`` (deinit does too).
/// **Thread safety:** The flags behind a `TestBox`; each relay's sockets are its thread's own.
final class RedisLinkProxy: Sendable {
    let port: Int
    private let targetPort: Int
    private let listener: Int32
    /// `generation` rises on each cut: a relay started before it ends.
    private let state = TestBox<(cut: Bool, stopped: Bool, generation: Int, accepted: Int, relaying: Int)>(
        (false, false, 0, 0, 0)
    )
    private let acceptorDone = TestSignal()

    init(targetPort: Int) throws {
        self.targetPort = targetPort
        (listener, port) = try LoopbackListener.open()
        Thread { [self] in acceptLoop() }.start()
    }

    deinit {
        stop()
    }

    /// Connections accepted so far (relayed or refused).
    var accepted: Int { state.value.accepted }

    /// Connections being relayed right now.
    var relaying: Int { state.value.relaying }

    /// Drops every relayed connection and refuses new ones until ``restore()``; returns once every relay has ended
    /// (each notices within 100 ms), or false if that took more than 5 s.
    @discardableResult
    func cut() -> Bool {
        state.update {
            $0.cut = true
            $0.generation += 1
        }
        let signal = TestSignal()
        for _ in 0..<1000 where relaying > 0 {
            _ = signal.wait(timeout: .milliseconds(5))
        }
        return relaying == 0
    }

    /// Relays new connections again.
    func restore() {
        state.update { $0.cut = false }
    }

    /// Stops accepting and ends every relay at its next look.
    func stop() {
        let wasStopped = state.update { state -> Bool in
            defer {
                state.stopped = true
                state.generation += 1
            }
            return state.stopped
        }
        guard !wasStopped else { return }
        _ = acceptorDone.wait(timeout: .seconds(10))
        close(listener)
    }

    private func acceptLoop() {
        defer { acceptorDone.signal() }
        var accepted = 0
        while accepted < 200 && !state.value.stopped {
            var descriptor = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard Glibc.poll(&descriptor, 1, 100) > 0 else { continue }
            let client = LoopbackListener.accept(listener)
            guard client >= 0 else { continue }
            accepted += 1
            let (isCut, generation) = state.update { state -> (Bool, Int) in
                state.accepted += 1
                return (state.cut || state.stopped, state.generation)
            }
            guard !isCut, let upstream = connectToTarget() else {
                close(client)
                continue
            }
            state.update { $0.relaying += 1 }
            Thread { [self] in
                relay(client, upstream, generation: generation)
                close(client)
                close(upstream)
                state.update { $0.relaying -= 1 }
            }.start()
        }
    }

    private func connectToTarget() -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(targetPort).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            close(fd)
            return nil
        }
        return fd
    }

    /// Copies bytes both ways until either side closes, or a cut or stop comes after `generation`. Bounded by
    /// 10 million polls (a test ends long before).
    private func relay(_ client: Int32, _ upstream: Int32, generation: Int) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        for _ in 0..<10_000_000 {
            if state.value.generation != generation { return }
            var descriptors = [
                pollfd(fd: client, events: Int16(POLLIN), revents: 0),
                pollfd(fd: upstream, events: Int16(POLLIN), revents: 0),
            ]
            let ready = Glibc.poll(&descriptors, 2, 100)
            if ready < 0 && errno != EINTR { return }
            guard ready > 0 else { continue }
            for (index, descriptor) in descriptors.enumerated() where descriptor.revents != 0 {
                let from = index == 0 ? client : upstream
                let to = index == 0 ? upstream : client
                let count = buffer.withUnsafeMutableBytes { Glibc.recv(from, $0.baseAddress, $0.count, 0) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return }
                var sent = 0
                while sent < count {
                    let written = buffer.withUnsafeBytes {
                        Glibc.send(to, $0.baseAddress! + sent, count - sent, Int32(MSG_NOSIGNAL))
                    }
                    if written < 0 && errno == EINTR { continue }
                    guard written > 0 else { return }
                    sent += written
                }
            }
        }
    }
}
