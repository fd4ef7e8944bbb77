import Reactive

/// A log sink that keeps lines in memory: a test hook, `package` only.
///
/// **Thread safety:** safe to call from any thread.
package final class MemoryLogSink: LogSink, @unchecked Sendable {
    // @unchecked Sendable: `stored` is only touched inside `lock`.
    private let lock = Lock()
    private var stored: [String] = []  // Guarded by lock.
    private let onLine: (@Sendable (String) -> Void)?

    /// Creates an empty sink; `onLine` runs after each line is stored.
    package init(onLine: (@Sendable (String) -> Void)? = nil) {
        self.onLine = onLine
    }

    /// The lines written so far.
    package var lines: [String] { lock.withLock { stored } }

    package func write(line: [UInt8]) {
        let text = String(decoding: line, as: UTF8.self)
        lock.withLock { stored.append(text) }
        onLine?(text)
    }
}
