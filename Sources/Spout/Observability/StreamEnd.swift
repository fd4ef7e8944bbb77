/// Why a stream ended, as counted in metrics and written in the request log.
enum StreamEnd: String, Sendable, CaseIterable {
    /// The sequence finished and the final frame was written.
    case completed
    /// The client went away (closed or reset the connection).
    case clientGone = "client_gone"
    /// The client stayed connected but read nothing for `limits.writeStallTimeoutSeconds`; the server cut it.
    case writeStall = "write_stall"
    /// The producer failed (an upstream error after retries).
    case error
    /// The server is shutting down; the client got a final `event: end` with this reason.
    case shutdown
    /// A channel subscriber fell past its buffer (policy `disconnect`); it got `event: end` with this reason and
    /// resumes from the history with `Last-Event-ID`.
    case overflow
}
