import Reactive
import Synchronization

/// A gauge read from its source when `/metrics` is rendered, for a value something else already keeps
/// (the bytes in a cache) rather than one counted up and down; 0 until a source is set.
///
/// **Thread safety:** safe to call from any thread; the source must be too.
final class SampledGauge: MetricFamily, Sendable {
    private let name: String
    private let help: String
    private let source = LockedState<(@Sendable () -> Int)?>(nil)

    init(name: String, help: String) {
        self.name = name
        self.help = help
    }

    /// Reads the gauge from `read` from now on (replacing any earlier source).
    func sample(_ read: @escaping @Sendable () -> Int) {
        source.withLock { $0 = read }
    }

    /// The current value.
    var value: Int { source.withLock { $0 }?() ?? 0 }

    func render(into text: inout String) {
        text += "# HELP \(name) \(help)\n# TYPE \(name) gauge\n\(name) \(value)\n"
    }
}
