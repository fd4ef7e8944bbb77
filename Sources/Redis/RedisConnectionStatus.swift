/// Where a ``RedisConnection`` is, for readiness checks.
///
/// **Ownership:** A value.
/// **Thread safety:** Value type; not shared.
public enum RedisConnectionStatus: Equatable, Sendable, CustomStringConvertible {
    /// The first connection attempt (or its handshake) is under way; commands sent now are queued until it ends.
    case connecting
    /// Ready: commands are written as they are sent.
    case connected
    /// The connection failed; the client waits before its next attempt, or is in one. Commands sent while it waits
    /// fail at once with ``RedisError/connection(_:)`` (`notConnected`); those sent during an attempt are queued
    /// until it ends. `failures` counts the consecutive failed attempts; `lastError` says what the last was.
    case reconnecting(failures: Int, lastError: String)
    /// Closed by its owner, or gave up reconnecting; final.
    case closed

    public var description: String {
        switch self {
        case .connecting: return "connecting"
        case .connected: return "connected"
        case .reconnecting(let failures, let lastError): return "reconnecting (\(failures) failures; \(lastError))"
        case .closed: return "closed"
        }
    }

    /// Whether commands are being written now.
    public var isConnected: Bool { self == .connected }
}

/// Counters of a ``RedisConnection`` since it was created, for metrics.
///
/// Round-trip times are those of commands written on a ready connection (from the write to the reply); commands
/// queued during a connection attempt, blocking reads and the handshake are not counted.
///
/// **Ownership:** A value (a snapshot).
/// **Thread safety:** Value type; not shared.
public struct RedisConnectionMetrics: Equatable, Sendable {
    /// Commands handed to the connection (including those failed at once).
    public var commandsSent: Int = 0
    /// Replies received for them, error replies included.
    public var repliesReceived: Int = 0
    /// Error replies among them (`-ERR …`).
    public var errorReplies: Int = 0
    /// Commands that failed without a reply (``RedisError/connection(_:)``).
    public var commandsFailed: Int = 0
    /// Connections (or attempts) that failed: lost, timed out, refused, protocol violations.
    public var connectionFailures: Int = 0
    /// Times the connection became ready again after having been ready before.
    public var reconnects: Int = 0
    /// Round trips measured.
    public var roundTrips: Int = 0
    /// Their total time.
    public var roundTripTotal: Duration = .zero
    /// The longest of them.
    public var roundTripMax: Duration = .zero
    /// The last of them.
    public var roundTripLast: Duration = .zero
    /// `rediss://`: TLS handshakes completed, by OpenSSL's name of the protocol version (`TLSv1.3`, `TLSv1.2`).
    public var tlsHandshakes: [String: Int] = [:]
    /// `rediss://`: TLS handshakes that failed, by reason: a ``TLSFailure/Reason`` (`untrusted_certificate`,
    /// `hostname_mismatch`, `alert_received`, …), ``tlsTimeoutReason`` (not done within the connect timeout) or
    /// ``tlsAbandonedReason`` (the server closed or reset the connection during it). A failure before the server's
    /// first reply counts as the handshake's, even after our side of it completed (and was counted in
    /// ``tlsHandshakes``): a TLS 1.3 server refuses a client certificate only then.
    public var tlsHandshakeFailures: [String: Int] = [:]

    /// The failure reason of a TLS handshake not done within ``RedisConfiguration/connectTimeout``.
    public static let tlsTimeoutReason = "timeout"
    /// The failure reason of a TLS handshake the server ended (closed or reset the connection) without an alert.
    public static let tlsAbandonedReason = "abandoned"

    public init() {}

    /// The mean round-trip time, or nil before the first.
    public var roundTripMean: Duration? {
        roundTrips == 0 ? nil : roundTripTotal / roundTrips
    }
}
