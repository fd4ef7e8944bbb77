import HTTPServer
import Reactive
import Synchronization

/// How a finished stream went, for the request log and metrics.
struct StreamSummary: Sendable, Equatable {
    /// Elements written.
    var events: Int
    /// Body bytes written (including prologue, heartbeats and the final frame).
    var bytes: Int
    /// Why the stream ended.
    var end: StreamEnd
}
