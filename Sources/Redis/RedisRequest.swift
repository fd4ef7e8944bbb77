import Dispatch
import RESP

/// A command in flight through a ``RedisConnection``: where its outcome goes, and when it was written.
///
/// It is the `Context` of the connection's ``RESPConnectionStateMachine``: the machine hands it back with the
/// reply or the failure, and the connection calls ``complete(_:)``.
///
/// **Ownership:** Created by ``RedisConnection/send(_:on:completion:)``; held by the connection's inbox, then by
/// its state machine, until completed.
/// **Thread safety:** Created on any thread and passed once through the connection's locked inbox; after that only
/// its event loop touches ``writtenAt``. The rest is immutable.
final class RedisRequest: @unchecked Sendable {
    let command: RESPCommand
    /// The reply timeout for this command (nil: none).
    let timeout: Duration?
    /// Whether its round trip counts in the metrics (not for blocking reads).
    let measured: Bool
    /// Where ``completion`` runs; nil runs it on the event loop.
    let queue: DispatchQueue?
    let completion: @Sendable (Result<RESPValue, RedisError>) -> Void
    /// When it was written on a ready connection; nil while queued, or when written by the handshake. Loop-confined.
    var writtenAt: ContinuousClock.Instant?

    init(
        command: RESPCommand,
        timeout: Duration?,
        measured: Bool,
        queue: DispatchQueue?,
        completion: @escaping @Sendable (Result<RESPValue, RedisError>) -> Void
    ) {
        self.command = command
        self.timeout = timeout
        self.measured = measured
        self.queue = queue
        self.completion = completion
    }

    /// Delivers the outcome, on ``queue`` or at once.
    func complete(_ result: Result<RESPValue, RedisError>) {
        if let queue {
            let completion = completion
            queue.async { completion(result) }
        } else {
            completion(result)
        }
    }
}
