import Foundation

/// A log sink that writes each line to a descriptor at once, unbuffered: for the messages of a process that
/// is about to exit (a configuration error) before any buffered sink exists.
///
/// **Thread safety:** safe to call from any thread (each line is one `write(2)` loop).
public struct DirectLogSink: LogSink {
    private let descriptor: Int32

    /// Writes to `descriptor` (2 is standard error).
    public init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    public func write(line: [UInt8]) {
        BufferedLogSink.writeAll(line + [0x0A], to: descriptor)
    }
}
