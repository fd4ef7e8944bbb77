import Dispatch
import Foundation
import Reactive

/// Where log lines go. Spout's library code never opens a log of its own; it is handed one.
public protocol LogSink: Sendable {
    /// Writes one complete line (the sink adds nothing but may buffer).
    func write(line: [UInt8])
}
