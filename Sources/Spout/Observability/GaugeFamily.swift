import Reactive
import Synchronization

/// A value that goes up and down per label set, such as open connections by protocol.
///
/// A label set shows in the exposition once it has been changed, and stays (at 0 when everything it counted has
/// gone), so a series does not vanish between scrapes. The label values must come from a bounded set: every set
/// ever seen is kept.
///
/// **Ownership:** owned by its registry; its users keep a reference.
///
/// **Thread safety:** safe to call from any thread.
final class GaugeFamily: MetricFamily, @unchecked Sendable {
    // @unchecked Sendable: `cells` is only touched inside `lock`; each cell is an atomic.

    private let name: String
    private let help: String
    private let labels: [String]
    private let lock = Lock()
    private var cells: [[String]: Cell] = [:]  // Guarded by lock.

    /// The value of one label set. **Thread safety:** an atomic.
    final class Cell: Sendable {
        fileprivate let value = Atomic<Int>(0)
        fileprivate init() {}
    }

    init(name: String, help: String, labels: [String]) {
        self.name = name
        self.help = help
        self.labels = labels
    }

    /// Adds `amount` (which may be negative) to the value of these label values.
    func add(_ labelValues: [String], _ amount: Int) {
        let cell = lock.withLock {
            if let cell = cells[labelValues] { return cell }
            let cell = Cell()
            cells[labelValues] = cell
            return cell
        }
        cell.value.wrappingAdd(amount, ordering: .relaxed)
    }

    /// The current value of these label values (0 when never changed).
    func value(_ labelValues: [String]) -> Int {
        lock.withLock { cells[labelValues] }?.value.load(ordering: .relaxed) ?? 0
    }

    func render(into text: inout String) {
        text += "# HELP \(name) \(help)\n# TYPE \(name) gauge\n"
        let snapshot = lock.withLock { cells }.mapValues { $0.value.load(ordering: .relaxed) }
        for (labelValues, value) in snapshot.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
            text += "\(name)\(renderLabels(names: labels, values: labelValues)) \(value)\n"
        }
    }
}
