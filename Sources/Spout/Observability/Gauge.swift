import Reactive
import Synchronization

/// A value that goes up and down, such as the number of open streams.
///
/// **Thread safety:** safe to call from any thread (an atomic).
final class Gauge: MetricFamily, Sendable {
    private let name: String
    private let help: String
    private let current = Atomic<Int>(0)

    init(name: String, help: String) {
        self.name = name
        self.help = help
    }

    /// Adds `amount` (which may be negative).
    func add(_ amount: Int) {
        current.wrappingAdd(amount, ordering: .relaxed)
    }

    /// The current value.
    var value: Int { current.load(ordering: .relaxed) }

    func render(into text: inout String) {
        text += "# HELP \(name) \(help)\n# TYPE \(name) gauge\n\(name) \(value)\n"
    }
}
