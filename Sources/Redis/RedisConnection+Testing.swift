import EventLoops
import OpenSSL
import Synchronization

extension RedisConnection {
    /// How many readiness events the loop's poller has reported for the connection's sockets so far. For tests.
    package var readinessEventCount: Int { readinessEvents.load(ordering: .relaxed) }

    /// Whether reading over TLS is stalled now: decryption waits for the engine's output to drain (the server does
    /// not read) and the engine takes no more ciphertext. Call it on the loop. For tests.
    package var tlsReadStalled: Bool {
        loop.preconditionInEventLoop()
        guard let tls else { return false }
        return tls.inputStalled && tls.engine.inputCapacity == 0
    }
}
