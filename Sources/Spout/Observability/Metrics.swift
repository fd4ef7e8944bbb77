import Reactive
import Synchronization

/// A set of metric families rendered together in the Prometheus text exposition format (0.0.4).
///
/// **Ownership:** created once by the service and shared by every route.
///
/// **Thread safety:** safe to call from any thread; each family has its own lock.
public final class MetricsRegistry: @unchecked Sendable {
    // @unchecked Sendable: `families` is only touched inside `lock`; families lock themselves.
    private let lock = Lock()
    private var families: [any MetricFamily] = []  // Guarded by lock.

    /// Creates an empty registry.
    public init() {}

    /// Registers and returns a counter family.
    public func counter(_ name: String, help: String, labels: [String] = []) -> CounterFamily {
        register(CounterFamily(name: name, help: help, labels: labels))
    }

    /// Registers and returns a gauge.
    public func gauge(_ name: String, help: String) -> Gauge {
        register(Gauge(name: name, help: help))
    }

    /// Registers and returns a gauge whose value is read from a source at each render.
    public func sampledGauge(_ name: String, help: String) -> SampledGauge {
        register(SampledGauge(name: name, help: help))
    }

    /// Registers and returns a histogram family with the given upper bucket bounds (ascending).
    public func histogram(_ name: String, help: String, buckets: [Double], labels: [String] = []) -> HistogramFamily {
        register(HistogramFamily(name: name, help: help, buckets: buckets, labels: labels))
    }

    /// The whole registry in the Prometheus text format.
    public func render() -> String {
        var text = ""
        for family in lock.withLock({ families }) {
            family.render(into: &text)
        }
        return text
    }

    /// Registers a family that renders itself (process metrics, build info).
    func add(_ family: any MetricFamily) {
        lock.withLock { families.append(family) }
    }

    private func register<F: MetricFamily>(_ family: F) -> F {
        lock.withLock { families.append(family) }
        return family
    }
}

/// A metric family that can write itself in the text format.
protocol MetricFamily: AnyObject, Sendable {
    func render(into text: inout String)
}

/// Formats a label set: `{route="/health",status="200"}`, escaping as the format requires.
func renderLabels(names: [String], values: [String], extra: (String, String)? = nil) -> String {
    var pairs = zip(names, values).map { ($0, $1) }
    if let extra { pairs.append(extra) }
    guard !pairs.isEmpty else { return "" }
    let body = pairs.map { name, value in
        var escaped = ""
        for character in value {
            switch character {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "\n": escaped += "\\n"
            default: escaped.append(character)
            }
        }
        return "\(name)=\"\(escaped)\""
    }
    return "{" + body.joined(separator: ",") + "}"
}

func renderNumber(_ value: Double) -> String {
    if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
    return String(value)
}

/// A monotonically increasing count per label set.
///
/// Each label set has a ``Cell``; a hot path resolves its cell once (``cell(_:)``) and then counts with one
/// atomic update, without building label arrays or hashing them per event. A label set shows in the
/// exposition once it has been counted, whether or not its cell was resolved earlier.
///
/// **Ownership:** owned by its registry; routes keep a reference.
///
/// **Thread safety:** safe to call from any thread.
public final class CounterFamily: MetricFamily, @unchecked Sendable {
    // @unchecked Sendable: `cells` is only touched inside `lock`; each cell is atomic.

    /// The count of one label set.
    ///
    /// **Thread safety:** safe to call from any thread (atomics).
    public final class Cell: Sendable {
        private let count = Atomic<Int>(0)
        /// Whether anything was counted yet; a cell resolved in advance stays out of the exposition until then.
        private let touched = Atomic<Bool>(false)

        fileprivate init() {}

        /// Adds `amount` (saturating at `Int.max` on overflow).
        public func increment(by amount: Int = 1) {
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
    public func cell(_ labelValues: [String] = []) -> Cell {
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
    public func preinitialize(_ labelSets: [[String]]) {
        for labelValues in labelSets { cell(labelValues).markPresent() }
    }

    /// Adds `amount` (saturating) to the count for these label values.
    public func increment(_ labelValues: [String] = [], by amount: Int = 1) {
        cell(labelValues).increment(by: amount)
    }

    /// The current count for these label values.
    public func value(_ labelValues: [String] = []) -> Int {
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

/// A value that goes up and down, such as the number of open streams.
///
/// **Thread safety:** safe to call from any thread (an atomic).
public final class Gauge: MetricFamily, Sendable {
    private let name: String
    private let help: String
    private let current = Atomic<Int>(0)

    init(name: String, help: String) {
        self.name = name
        self.help = help
    }

    /// Adds `amount` (which may be negative).
    public func add(_ amount: Int) {
        current.wrappingAdd(amount, ordering: .relaxed)
    }

    /// The current value.
    public var value: Int { current.load(ordering: .relaxed) }

    func render(into text: inout String) {
        text += "# HELP \(name) \(help)\n# TYPE \(name) gauge\n\(name) \(value)\n"
    }
}

/// A gauge read from its source when `/metrics` is rendered, for a value something else already keeps
/// (the bytes in a cache) rather than one counted up and down; 0 until a source is set.
///
/// **Thread safety:** safe to call from any thread; the source must be too.
public final class SampledGauge: MetricFamily, Sendable {
    private let name: String
    private let help: String
    private let source = LockedState<(@Sendable () -> Int)?>(nil)

    init(name: String, help: String) {
        self.name = name
        self.help = help
    }

    /// Reads the gauge from `read` from now on (replacing any earlier source).
    public func sample(_ read: @escaping @Sendable () -> Int) {
        source.withLock { $0 = read }
    }

    /// The current value.
    public var value: Int { source.withLock { $0 }?() ?? 0 }

    func render(into text: inout String) {
        text += "# HELP \(name) \(help)\n# TYPE \(name) gauge\n\(name) \(value)\n"
    }
}

/// Observations counted into buckets, per label set, with their sum and count.
///
/// As with ``CounterFamily``, a hot path resolves the ``Series`` of its label set once (``series(_:)``)
/// and observes through it; a series shows in the exposition once it has an observation.
///
/// **Thread safety:** safe to call from any thread.
public final class HistogramFamily: MetricFamily, @unchecked Sendable {
    // @unchecked Sendable: `table` is only touched inside `lock`; each series has its own lock.

    /// The buckets, sum and count of one label set.
    ///
    /// **Thread safety:** safe to call from any thread.
    public final class Series: @unchecked Sendable {
        // @unchecked Sendable: `state` is only touched inside `lock`; `bounds` is immutable.
        fileprivate struct State {
            var buckets: [Int]
            var sum = 0.0
            var count = 0
        }

        private let bounds: [Double]  // Immutable.
        private let lock = Lock()
        private var state: State  // Guarded by lock.

        fileprivate init(bounds: [Double]) {
            self.bounds = bounds
            state = State(buckets: Array(repeating: 0, count: bounds.count + 1))
        }

        /// Records one observation (e.g. a duration in seconds).
        public func observe(_ value: Double) {
            let index = bounds.firstIndex { value <= $0 } ?? bounds.count
            lock.withLock {
                state.buckets[index] += 1
                state.sum += value.isFinite ? value : 0
                state.count += 1
            }
        }

        fileprivate var snapshot: State { lock.withLock { state } }
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
    public func series(_ labelValues: [String] = []) -> Series {
        lock.withLock {
            if let series = table[labelValues] { return series }
            let series = Series(bounds: bounds)
            table[labelValues] = series
            return series
        }
    }

    /// Records one observation (e.g. a duration in seconds).
    public func observe(_ value: Double, _ labelValues: [String] = []) {
        series(labelValues).observe(value)
    }

    /// The number of observations for these label values.
    public func count(_ labelValues: [String] = []) -> Int {
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
