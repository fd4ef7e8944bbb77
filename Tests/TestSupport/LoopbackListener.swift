import Foundation
import Glibc

/// A listening TCP socket on a free loopback port, for the tests' own fake servers (a misbehaving Redis, a relay that
/// can cut a connection): the descriptor and the port the kernel chose.
public enum LoopbackListener {
    /// Opens a close-on-exec socket bound to `127.0.0.1` on a port the kernel picks, listening with `backlog`.
    ///
    /// - Throws: `POSIXError` when no socket can be made or bound.
    public static func open(backlog: Int32 = 16) throws -> (fd: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EMFILE) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard bound == 0, named == 0, listen(fd, backlog) == 0 else {
            close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// Accepts a connection on `listener` and makes it close-on-exec at once, so a child another test spawns
    /// meanwhile (an exit test's copy of the test process) does not hold the connection open after the fixture
    /// closed it. Returns `accept(2)`'s result (-1 with `errno` set on failure).
    public static func accept(_ listener: Int32) -> Int32 {
        let fd = Glibc.accept(listener, nil, nil)
        if fd >= 0 { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return fd
    }

    /// Accepts on `listener` until `isStopped()` (looked at every 100 ms at most), handing each connection,
    /// close-on-exec, to `accepted` on this thread; closes the listener when it returns. For a fixture's accept
    /// thread: `Thread.detachNewThread { LoopbackListener.acceptUntil(listener, stopped: …) { fd in … } }`.
    public static func acceptUntil(_ listener: Int32, stopped isStopped: () -> Bool, _ accepted: (Int32) -> Void) {
        defer { close(listener) }
        while !isStopped() {
            var look = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&look, 1, 100) >= 0 else { return }
            guard look.revents != 0, !isStopped() else { continue }
            let fd = accept(listener)
            if fd >= 0 { accepted(fd) }
        }
    }
}
