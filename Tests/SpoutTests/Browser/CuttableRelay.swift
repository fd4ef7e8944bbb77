import Dispatch
import Foundation
import Glibc
import Reactive
import Synchronization
import TestSupport

/// A TCP relay on an ephemeral loopback port that forwards every connection to a target port and
/// can cut them all at once, as a network that drops mid-stream would: both sockets are shut down,
/// so the client sees its response end early and the server sees its client go.
///
/// It keeps the request heads the clients sent (each up to its blank line), so a test can check
/// what a browser put in a request, `Last-Event-ID` included.
///
///     let relay = try CuttableRelay(targetPort: server.port)
///     defer { relay.stop() }
///     // point the client at relay.port, then:
///     relay.cutAll()
///
/// **Ownership:** the test owns it and calls ``stop()``.
///
/// **Thread safety:** safe to call from any thread; each connection is pumped by two threads of its own.
final class CuttableRelay: Sendable {
    /// One relayed connection: the client's socket and ours to the target.
    private struct Link {
        let client: Int32
        let upstream: Int32
        /// Pumps still running; the last one to stop closes both sockets.
        var running = 2
        var isCut = false
    }

    private struct State {
        var links: [Int: Link] = [:]
        var nextLink = 0
        var heads: [String] = []
        var stopped = false
    }

    /// The relay's port on 127.0.0.1.
    let port: Int
    private let targetPort: Int
    private let listener: Int32  // Closed by the accept thread when it ends.
    private let state = LockedState(State())
    private let acceptEnded = TestSignal()

    init(targetPort: Int) throws {
        self.targetPort = targetPort
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw LoopbackClient.Failure.system(call: "socket", errno: errno) }
        var address = sockaddr_in.loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && listen(fd, 64) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else {
            let code = errno
            close(fd)
            throw LoopbackClient.Failure.system(call: "bind", errno: code)
        }
        listener = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread { [self] in acceptLoop() }.start()
    }

    /// The request heads received so far, oldest first, each as text up to (not including) its blank line.
    var requestHeads: [String] { state.withLock { $0.heads } }

    /// How many connections are open now.
    var openConnections: Int { state.withLock { $0.links.values.filter { !$0.isCut }.count } }

    /// Shuts down every open connection, both ways.
    func cutAll() {
        state.withLock { state in
            for (key, link) in state.links where !link.isCut {
                state.links[key]?.isCut = true
                shutdown(link.client, Int32(SHUT_RDWR))
                shutdown(link.upstream, Int32(SHUT_RDWR))
            }
        }
    }

    /// Stops accepting and cuts what is open; waits (up to 5 s) for the accept thread to end.
    func stop() {
        let first = state.withLock { state in
            defer { state.stopped = true }
            return !state.stopped
        }
        guard first else { return }
        // On Linux this wakes the blocked accept(2), which then fails.
        shutdown(listener, Int32(SHUT_RDWR))
        cutAll()
        _ = acceptEnded.wait(timeout: .seconds(5))
    }

    deinit {
        stop()
    }

    private func acceptLoop() {
        defer {
            close(listener)
            acceptEnded.signal()
        }
        while true {
            let client = LoopbackListener.accept(listener)
            if client < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                return
            }
            guard let upstream = connectToTarget() else {
                close(client)
                continue
            }
            let key: Int? = state.withLock { state in
                guard !state.stopped else { return nil }
                let key = state.nextLink
                state.nextLink += 1
                state.links[key] = Link(client: client, upstream: upstream)
                return key
            }
            guard let key else {
                close(client)
                close(upstream)
                return
            }
            Thread { [self] in pump(from: client, to: upstream, link: key, recordingHeads: true) }.start()
            Thread { [self] in pump(from: upstream, to: client, link: key, recordingHeads: false) }.start()
        }
    }

    private func connectToTarget() -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = sockaddr_in.loopback(port: UInt16(targetPort))
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard connected else {
            close(fd)
            return nil
        }
        return fd
    }

    /// Copies bytes one way until either side ends, then ends both ways.
    private func pump(from source: Int32, to destination: Int32, link key: Int, recordingHeads: Bool) {
        var pending: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        copying: while true {
            let count = chunk.withUnsafeMutableBytes { read(source, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            if recordingHeads { record(chunk[..<count], into: &pending) }
            var offset = 0
            while offset < count {
                let written = chunk[offset..<count].withUnsafeBytes {
                    send(destination, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
                }
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { break copying }
                offset += written
            }
        }
        state.withLock { state in
            guard var link = state.links[key] else { return }
            shutdown(link.client, Int32(SHUT_RDWR))
            shutdown(link.upstream, Int32(SHUT_RDWR))
            link.running -= 1
            link.isCut = true
            if link.running == 0 {
                close(link.client)
                close(link.upstream)
                state.links[key] = nil
            } else {
                state.links[key] = link
            }
        }
    }

    /// Collects complete request heads (requests without bodies, as `EventSource` sends).
    private func record(_ bytes: ArraySlice<UInt8>, into pending: inout [UInt8]) {
        pending.append(contentsOf: bytes)
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        while let range = pending.firstRange(of: separator) {
            let head = String(decoding: pending[..<range.lowerBound], as: UTF8.self)
            pending.removeSubrange(..<range.upperBound)
            state.withLock { $0.heads.append(head) }
        }
        if pending.count > 65536 { pending.removeAll() }
    }
}

extension sockaddr_in {
    /// 127.0.0.1:`port`.
    fileprivate static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return address
    }
}
