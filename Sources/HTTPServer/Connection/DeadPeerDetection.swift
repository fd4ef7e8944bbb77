import Glibc

/// Makes the kernel notice, within a bound, that the peer of a streaming connection vanished without a FIN
/// (cable pulled, laptop closed, a NAT that forgot the flow): a stream whose reader is gone would otherwise stay
/// open until the write-stall timeout, and a subscriber to a channel would stay "present".
///
/// Two kernel mechanisms, together on the connection's socket:
/// - `TCP_USER_TIMEOUT`: data sent and not acknowledged for `seconds` fails the socket (`ETIMEDOUT`). A stream
///   with heartbeats always has something in flight within a heartbeat interval, so a dead SSE reader is noticed
///   within `seconds` plus one interval (the heartbeat's write is the deadline's start);
/// - TCP keepalive (`SO_KEEPALIVE`, `TCP_KEEPIDLE` a third of `seconds`, then `TCP_KEEPCNT` 3 probes
///   `TCP_KEEPINTVL` a ninth of it apart): a connection with nothing in flight (NDJSON, which has no heartbeats)
///   is probed, and fails when no probe is answered.
///
/// The failed socket's next read or write errors, and the connection closes as for any peer that left.
///
/// **Thread safety:** stateless; the descriptor must be used by one queue at a time.
package enum DeadPeerDetection {
    /// `TCP_USER_TIMEOUT` from `linux/tcp.h` (Glibc's module does not export it).
    package static let tcpUserTimeout: Int32 = 18

    /// Arms both on `fd` for a bound of `seconds` (at least 3). Best effort: a failure leaves the kernel's
    /// defaults.
    package static func arm(_ fd: Int32, seconds: Int) {
        let seconds = Int32(clamping: max(3, seconds))
        set(fd, SOL_SOCKET, SO_KEEPALIVE, 1)
        set(fd, Int32(IPPROTO_TCP), TCP_KEEPIDLE, max(1, seconds / 3))
        set(fd, Int32(IPPROTO_TCP), TCP_KEEPINTVL, max(1, seconds / 9))
        set(fd, Int32(IPPROTO_TCP), TCP_KEEPCNT, 3)
        set(fd, Int32(IPPROTO_TCP), tcpUserTimeout, seconds.multipliedReportingOverflow(by: 1000).partialValue)
    }

    /// An option's value as the kernel reports it, for tests.
    package static func option(_ fd: Int32, _ level: Int32, _ name: Int32) -> Int32? {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, level, name, &value, &length) == 0 else { return nil }
        return value
    }

    private static func set(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) {
        var value = value
        _ = setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size))
    }
}
