import Dispatch
import Foundation
import Reactive
import Synchronization

/// A log sink that batches lines and writes them to a file descriptor (standard output by
/// default) from a background queue, so request handling never waits on the terminal or pipe.
///
/// Lines are flushed when 64 KiB are pending, 50 ms after the first pending line, and by ``flush()``.
///
/// **Ownership:** created by the executable; lives as long as the process.
///
/// **Thread safety:** safe to call from any thread.
public final class BufferedLogSink: LogSink, Sendable {
    /// The lines not written yet, and whether a flush is on its way.
    private struct Batch {
        var pending: [UInt8]
        var flushScheduled = false
    }

    private let descriptor: Int32
    private let queue = DispatchQueue(label: "spout.log")
    // Inside the lock's own storage: no dynamic exclusivity check per access, and none switched off.
    private let batch: LockedState<Batch>

    /// Bytes pending that make a flush start at once.
    private static let batchBytes = 65_536
    /// Room reserved past ``batchBytes`` for the line that crosses it (a request line is at most a few KiB).
    private static let lineAllowance = 8192

    /// Creates a sink writing to `descriptor` (1 is standard output).
    public init(descriptor: Int32 = 1) {
        self.descriptor = descriptor
        batch = LockedState(Batch(pending: Self.emptyBatch()))
    }

    /// An empty buffer with room for a whole batch: reserved once, rather than grown line by line (a dozen
    /// reallocations and copies per batch, about 300 instructions a request).
    private static func emptyBatch() -> [UInt8] {
        var batch: [UInt8] = []
        batch.reserveCapacity(batchBytes + lineAllowance)
        return batch
    }

    public func write(line: [UInt8]) {
        write(lineCapacity: line.count) { $0.append(contentsOf: line) }
    }

    /// Lets `append` write the line straight into the pending buffer, under the lock.
    public func write(lineCapacity: Int, _ append: (inout [UInt8]) -> Void) {
        let action = batch.withLock { batch -> FlushAction in
            append(&batch.pending)
            batch.pending.append(0x0A)
            if batch.pending.count >= Self.batchBytes { return .now }
            if batch.flushScheduled { return .none }
            batch.flushScheduled = true
            return .later
        }
        switch action {
        case .now: queue.async { self.drain() }
        case .later: queue.asyncAfter(deadline: .now() + .milliseconds(50)) { self.drain() }
        case .none: break
        }
    }

    /// Writes everything pending and returns when it is written.
    public func flush() {
        queue.sync { drain() }
    }

    private enum FlushAction {
        case now
        case later
        case none
    }

    private func drain() {
        let bytes = batch.withLock { batch -> [UInt8] in
            batch.flushScheduled = false
            defer { batch.pending = Self.emptyBatch() }
            return batch.pending
        }
        Self.writeAll(bytes, to: descriptor)
    }

    /// Writes all of `bytes` to `descriptor`, retrying short writes and `EINTR`; gives up quietly on any other
    /// failure: a closed or broken stdout must not take the service down.
    static func writeAll(_ bytes: [UInt8], to descriptor: Int32) {
        var offset = 0
        bytes.withUnsafeBytes { raw in
            while offset < raw.count {
                let written = Foundation.write(descriptor, raw.baseAddress! + offset, raw.count - offset)
                if written > 0 {
                    offset += written
                } else if !(written < 0 && errno == EINTR) {
                    return
                }
            }
        }
    }
}
