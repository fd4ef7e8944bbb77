import Reactive
import Synchronization

/// A monotonically increasing count per label set.
///
/// Each label set has a ``Cell``; a hot path resolves its cell once (``cell(_:)``) and then counts with one
/// atomic update, without building label arrays or hashing them per event. A label set shows in the
/// exposition once it has been counted, whether or not its cell was resolved earlier.
///
/// **Ownership:** owned by its registry; routes keep a reference.
///
/// **Thread safety:** safe to call from any thread.
final class CounterFamily: MetricFamily, @unchecked Sendable {
    // @unchecked Sendable: `cells` is only touched inside `lock`; each cell is atomic.

    /// The count of one label set.
    ///
    /// **Thread safety:** safe to call from any thread (atomics).
    final class Cell: Sendable {
        private let count = Atomic<Int>(0)
        /// Whether anything was counted yet; a cell resolved in advance stays out of the exposition until then.
        private let touched = Atomic<Bool>(false)

        fileprivate init() {}

        /// Adds `amount` (saturating at `Int.max` on overflow).
        func increment(by amount: Int = 1) {
            if !touched.load(ordering: .relaxed) { touched.store(true, ordering: .relaxed) }
            var current = count.load(ordering: .relaxed)
            while true {
                let (sum, overflow) = current.addingReportingOverflow(amount)
                let (exchanged, original) = count.compareExchange(
                    expected: current,
                    desired: overflow ? .max : sum,
                    ordering: .relaxed
                )
                if exchanged { return }
                current = original
            }
        }

        /// Shows the cell in the exposition from now on, at its count (0 if nothing was counted).
        fileprivate func markPresent() {
            touched.store(true, ordering: .relaxed)
        }

        /// The count so far, or `nil` when nothing was counted.
        fileprivate var snapshot: Int? {
            touched.load(ordering: .relaxed) ? count.load(ordering: .relaxed) : nil
        }
    }

    private let name: String
    private let help: String
    private let labels: [String]
    private let lock = Lock()
    private var cells: [[String]: Cell] = [:]  // Guarded by lock.

    init(name: String, help: String, labels: [String]) {
        self.name = name
        self.help = help
        self.labels = labels
    }

    /// The cell of these label values, created if needed; counting through it is the same as ``increment(_:by:)``.
    func cell(_ labelValues: [String] = []) -> Cell {
        lock.withLock {
            if let cell = cells[labelValues] { return cell }
            let cell = Cell()
            cells[labelValues] = cell
            return cell
        }
    }

    /// Shows each of these label sets in the exposition from the start, at 0 until counted: for closed label
    /// sets (every stream end reason, every upstream outcome), so that `rate()` and alerts see a series before
    /// its first event.
    func preinitialize(_ labelSets: [[String]]) {
        for labelValues in labelSets { cell(labelValues).markPresent() }
    }

    /// Adds `amount` (saturating) to the count for these label values.
    func increment(_ labelValues: [String] = [], by amount: Int = 1) {
        cell(labelValues).increment(by: amount)
    }

    /// The current count for these label values.
    func value(_ labelValues: [String] = []) -> Int {
        lock.withLock { cells[labelValues] }?.snapshot ?? 0
    }

    func render(into text: inout String) {
        text += "# HELP \(name) \(help)\n# TYPE \(name) counter\n"
        let snapshot = lock.withLock { cells }.compactMapValues(\.snapshot)
        if snapshot.isEmpty && labels.isEmpty { text += "\(name) 0\n" }
        for (labelValues, value) in snapshot.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
            text += "\(name)\(renderLabels(names: labels, values: labelValues)) \(value)\n"
        }
    }
}
