import Dispatch
import Foundation
import Reactive

/// Where log lines go. Spout's library code never opens a log of its own; it is handed one.
public protocol LogSink: Sendable {
    /// Writes one complete line (the sink adds nothing but may buffer).
    func write(line: [UInt8])

    /// Writes one line that `append` appends to the buffer it is given (without the trailing newline); a sink
    /// may lend its own buffer, so the line is not built apart and copied. `lineCapacity` is a hint.
    func write(lineCapacity: Int, _ append: (inout [UInt8]) -> Void)
}

extension LogSink {
    /// Builds the line in an array of its own and passes it to ``write(line:)``.
    public func write(lineCapacity: Int, _ append: (inout [UInt8]) -> Void) {
        var line: [UInt8] = []
        line.reserveCapacity(lineCapacity)
        append(&line)
        write(line: line)
    }
}
