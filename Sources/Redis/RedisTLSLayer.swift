import EventLoops
import OpenSSL

/// The TLS layer of one `rediss://` socket of a ``RedisConnection``: its ``TLSEngine``, whether the handshake
/// completed, and the ciphertext the kernel has not taken yet.
///
/// **Ownership:** Owned by its connection for the socket's life; a new socket gets a new layer.
///
/// **Thread safety:** Confined to the connection's loop, like the connection.
final class RedisTLSLayer {
    /// The TLS connection, made from ``RedisConfiguration/tls`` for the URL's host.
    let engine: TLSEngine
    /// Whether the handshake completed (the machine has been told the connection is up).
    var handshakeDone = false
    /// Whether the handshake's failure has been counted (``RedisConnectionMetrics/tlsHandshakeFailures``), so the
    /// connection's close that follows does not count it again.
    var handshakeFailureCounted = false
    /// Whether the server has sent plaintext (its first reply). Until it has, a failure counts as the handshake's:
    /// a TLS 1.3 server refuses a client's certificate after the client's side of the handshake has completed.
    var receivedPlaintext = false

    /// Whether a failure now is the handshake's, for the metrics: before the server's first plaintext, and not
    /// counted yet.
    var failureIsTheHandshakes: Bool { !receivedPlaintext && !handshakeFailureCounted }
    /// Whether plaintext was left undecrypted because the engine's output was full.
    var inputStalled = false
    /// Ciphertext taken from the engine that the kernel refused: sent before anything else. Empty (no storage)
    /// while the server keeps up.
    var unsent: [UInt8] = []
    /// How much of ``unsent`` has been sent.
    var unsentOffset = 0

    init(engine: TLSEngine) {
        self.engine = engine
    }

    /// Sends what the engine holds (a failure's alert), best effort: what the kernel refuses is dropped, since the
    /// socket closes next.
    func sendPendingOutput(_ fd: Int32) {
        guard fd >= 0 else { return }
        let output = engine.takeOutput(maxCount: 64 << 10)
        if !output.isEmpty { _ = output.withUnsafeBytes { try? Socket.send(fd, $0) } }
    }

    /// Our close_notify before the socket closes, best effort, when the session is up and nothing is half sent.
    func sendCloseNotify(_ fd: Int32) {
        guard handshakeDone, !engine.sentCloseNotify, unsentOffset == unsent.count else { return }
        switch engine.shutdown() {
        case .sent, .complete: sendPendingOutput(fd)
        case .failed: break
        }
    }
}
