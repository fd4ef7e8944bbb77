import Reactive
import Synchronization

/// Observations counted into buckets, per label set, with their sum and count.
///
/// As with ``CounterFamily``, a hot path resolves the ``Series`` of its label set once (``series(_:)``)
/// and observes through it; a series shows in the exposition once it has an observation.
///
/// **Thread safety:** safe to call from any thread.
final class HistogramFamily: MetricFamily, @unchecked Sendable {
    // @unchecked Sendable: `table` is only touched inside `lock`; each series has its own lock.

    /// The buckets, sum and count of one label set.
    ///
    /// **Thread safety:** safe to call from any thread.
    final class Series: Sendable {
        fileprivate struct State {
            var buckets: [Int]
            var sum = 0.0
            var count = 0
        }

        private let bounds: [Double]
        // Inside the lock's own storage: no dynamic exclusivity check per observation, and none switched off.
        private let state: LockedState<State>

        fileprivate init(bounds: [Double]) {
            self.bounds = bounds
            state = LockedState(State(buckets: Array(repeating: 0, count: bounds.count + 1)))
        }

        /// Records one observation (e.g. a duration in seconds).
        func observe(_ value: Double) {
            let index = bounds.firstIndex { value <= $0 } ?? bounds.count
            state.withLock { state in
                state.buckets[index] += 1
                state.sum += value.isFinite ? value : 0
                state.count += 1
            }
        }

        fileprivate var snapshot: State { state.withLock { $0 } }
    }

    private let name: String
    private let help: String
    private let bounds: [Double]
    private let labels: [String]
    private let lock = Lock()
    private var table: [[String]: Series] = [:]  // Guarded by lock.

    init(name: String, help: String, buckets: [Double], labels: [String]) {
        self.name = name
        self.help = help
        self.bounds = buckets.sorted()
        self.labels = labels
    }

    /// The series of these label values, created if needed; observing through it is the same as
    /// ``observe(_:_:)``.
    func series(_ labelValues: [String] = []) -> Series {
        lock.withLock {
            if let series = table[labelValues] { return series }
            let series = Series(bounds: bounds)
            table[labelValues] = series
            return series
        }
    }

    /// Records one observation (e.g. a duration in seconds).
    func observe(_ value: Double, _ labelValues: [String] = []) {
        series(labelValues).observe(value)
    }

    /// The number of observations for these label values.
    func count(_ labelValues: [String] = []) -> Int {
        lock.withLock { table[labelValues] }?.snapshot.count ?? 0
    }

    func render(into text: inout String) {
        text += "# HELP \(name) \(help)\n# TYPE \(name) histogram\n"
        let snapshot = lock.withLock { table }.mapValues(\.snapshot).filter { $0.value.count > 0 }
        for (labelValues, entry) in snapshot.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
            var cumulative = 0
            for (index, bound) in bounds.enumerated() {
                cumulative += entry.buckets[index]
                let labelText = renderLabels(names: labels, values: labelValues, extra: ("le", renderNumber(bound)))
                text += "\(name)_bucket\(labelText) \(cumulative)\n"
            }
            cumulative += entry.buckets[bounds.count]
            text +=
                "\(name)_bucket\(renderLabels(names: labels, values: labelValues, extra: ("le", "+Inf"))) \(cumulative)\n"
            text += "\(name)_sum\(renderLabels(names: labels, values: labelValues)) \(entry.sum)\n"
            text += "\(name)_count\(renderLabels(names: labels, values: labelValues)) \(entry.count)\n"
        }
    }
}
