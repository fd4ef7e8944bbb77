import Glibc

/// Makes the kernel notice, within a bound, that the peer of a streaming connection vanished without a FIN
/// (cable pulled, laptop closed, a NAT that forgot the flow): a stream whose reader is gone would otherwise stay
/// open until the write-stall timeout, and a subscriber to a channel would stay "present".
///
/// Two kernel mechanisms, together on the connection's socket:
/// - TCP keepalive (`SO_KEEPALIVE`, `TCP_KEEPIDLE` a third of `seconds`, then `TCP_KEEPCNT` 3 probes
///   `TCP_KEEPINTVL` a ninth of it apart): a connection with nothing in flight (NDJSON between events, SSE between
///   a heartbeat's acknowledgement and the next) is probed, and fails within about `seconds` when no probe is
///   answered;
/// - `TCP_USER_TIMEOUT`: data sent and not acknowledged fails the socket (`ETIMEDOUT`). On Linux this also counts
///   the time a reader keeps its receive window shut (zero-window probes), so it cannot be shorter than the
///   server's write-stall timeout without cutting a live reader that merely stopped reading, which the write-stall
///   timeout promises to keep (and a channel's `drop-oldest` policy serves with gaps). It is set to the larger of
///   the two: a peer that vanished with data in flight is noticed within the write-stall timeout, one with nothing
///   in flight within `seconds`.
///
/// The failed socket's next read or write errors, and the connection closes as for any peer that left.
///
/// A third check closes the gap the user timeout leaves: while a stream is open the server reads the socket's
/// `TCP_INFO` every ``checkInterval(seconds:)`` and closes the connection when data is in flight (unacknowledged
/// segments) and no acknowledgement at all came for ``vanishedAfterMilliseconds(seconds:)`` (``hasVanished``). A
/// live reader that stopped reading is not cut: it acknowledges what it got (with a shut window), so nothing stays
/// unacknowledged, and its window probes are answered; a live reader on a working path acknowledges within a
/// round trip. So a peer gone with a heartbeat in flight is noticed within `seconds` of its last acknowledgement,
/// as one gone with nothing in flight is by keepalive.
///
/// **Thread safety:** stateless; the descriptor must be used by one queue at a time.
package enum DeadPeerDetection {
    /// `TCP_USER_TIMEOUT` from `linux/tcp.h` (Glibc's module does not export it).
    package static let tcpUserTimeout: Int32 = 18

    /// Arms both on `fd`: keepalive for a bound of `seconds` (at least 3), the user timeout for the larger of that
    /// and `stalledReaderSeconds` (the write-stall timeout). Best effort: a failure leaves the kernel's defaults.
    package static func arm(_ fd: Int32, seconds: Int, stalledReaderSeconds: Int) {
        let seconds = Int32(clamping: max(3, seconds))
        let userTimeout = max(seconds, Int32(clamping: stalledReaderSeconds))
        set(fd, SOL_SOCKET, SO_KEEPALIVE, 1)
        set(fd, Int32(IPPROTO_TCP), TCP_KEEPIDLE, max(1, seconds / 3))
        set(fd, Int32(IPPROTO_TCP), TCP_KEEPINTVL, max(1, seconds / 9))
        set(fd, Int32(IPPROTO_TCP), TCP_KEEPCNT, 3)
        let milliseconds = userTimeout.multipliedReportingOverflow(by: 1000)
        set(fd, Int32(IPPROTO_TCP), tcpUserTimeout, milliseconds.overflow ? Int32.max : milliseconds.partialValue)
    }

    /// What `TCP_INFO` says of a socket's peer.
    package struct Acknowledgements: Equatable, Sendable {
        /// Segments sent and not acknowledged (`tcpi_unacked`).
        package var unacknowledged: UInt32
        /// Milliseconds since the last acknowledgement came (`tcpi_last_ack_recv`).
        package var sinceLastMilliseconds: UInt32

        package init(unacknowledged: UInt32, sinceLastMilliseconds: UInt32) {
            self.unacknowledged = unacknowledged
            self.sinceLastMilliseconds = sinceLastMilliseconds
        }
    }

    /// `fd`'s ``Acknowledgements``, nil when the kernel does not say.
    package static func acknowledgements(_ fd: Int32) -> Acknowledgements? {
        var info = tcp_info()
        var length = socklen_t(MemoryLayout<tcp_info>.size)
        guard getsockopt(fd, Int32(IPPROTO_TCP), TCP_INFO, &info, &length) == 0 else { return nil }
        return Acknowledgements(unacknowledged: info.tcpi_unacked, sinceLastMilliseconds: info.tcpi_last_ack_recv)
    }

    /// How often an open stream's socket is checked for a vanished peer: an eighth of `seconds`, at least a
    /// second (nanoseconds).
    package static func checkInterval(seconds: Int) -> UInt64 {
        max(1_000_000_000, UInt64(clamping: max(3, seconds)).multipliedReportingOverflow(by: 125_000_000).partialValue)
    }

    /// How long without any acknowledgement, data in flight, makes a peer vanished: `seconds` (at least 3, as
    /// keepalive's) less one ``checkInterval(seconds:)``, so the check that sees it comes within `seconds`.
    package static func vanishedAfterMilliseconds(seconds: Int) -> UInt32 {
        let total = UInt64(clamping: max(3, seconds)).multipliedReportingOverflow(by: 1000).partialValue
        return UInt32(clamping: total &- min(total / 2, checkInterval(seconds: seconds) / 1_000_000))
    }

    /// Whether a peer that acknowledged as `acknowledgements` says has vanished, for a bound of `seconds`: data in
    /// flight and no acknowledgement for ``vanishedAfterMilliseconds(seconds:)``.
    package static func hasVanished(_ acknowledgements: Acknowledgements, seconds: Int) -> Bool {
        acknowledgements.unacknowledged > 0
            && acknowledgements.sinceLastMilliseconds >= vanishedAfterMilliseconds(seconds: seconds)
    }

    /// Makes `fd`'s close a reset (`SO_LINGER` 0): the kernel drops its unsent data at once rather than keep
    /// retransmitting it to a peer that is gone.
    package static func resetOnClose(_ fd: Int32) {
        var value = linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &value, socklen_t(MemoryLayout<linger>.size))
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
