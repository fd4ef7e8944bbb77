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
/// **Ownership:** owned by its registry; routes keep a reference.
///
/// **Thread safety:** safe to call from any thread.
public final class CounterFamily: MetricFamily, @unchecked Sendable {
    // @unchecked Sendable: `values` is only touched inside `lock`.
    private let name: String
    private let help: String
    private let labels: [String]
    private let lock = Lock()
    private var values: [[String]: Int] = [:]  // Guarded by lock.

    init(name: String, help: String, labels: [String]) {
        self.name = name
        self.help = help
        self.labels = labels
    }

    /// Adds `amount` (saturating) to the count for these label values.
    public func increment(_ labelValues: [String] = [], by amount: Int = 1) {
        lock.withLock {
            let (sum, overflow) = values[labelValues, default: 0].addingReportingOverflow(amount)
            values[labelValues] = overflow ? .max : sum
        }
    }

    /// The current count for these label values.
    public func value(_ labelValues: [String] = []) -> Int {
        lock.withLock { values[labelValues, default: 0] }
    }

    func render(into text: inout String) {
        text += "# HELP \(name) \(help)\n# TYPE \(name) counter\n"
        let snapshot = lock.withLock { values }
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

/// Observations counted into buckets, per label set, with their sum and count.
///
/// **Thread safety:** safe to call from any thread.
public final class HistogramFamily: MetricFamily, @unchecked Sendable {
    // @unchecked Sendable: `series` is only touched inside `lock`.
    private struct Series {
        var buckets: [Int]
        var sum = 0.0
        var count = 0
    }

    private let name: String
    private let help: String
    private let bounds: [Double]
    private let labels: [String]
    private let lock = Lock()
    private var series: [[String]: Series] = [:]  // Guarded by lock.

    init(name: String, help: String, buckets: [Double], labels: [String]) {
        self.name = name
        self.help = help
        self.bounds = buckets.sorted()
        self.labels = labels
    }

    /// Records one observation (e.g. a duration in seconds).
    public func observe(_ value: Double, _ labelValues: [String] = []) {
        let index = bounds.firstIndex { value <= $0 } ?? bounds.count
        lock.withLock {
            var entry = series[labelValues] ?? Series(buckets: Array(repeating: 0, count: bounds.count + 1))
            entry.buckets[index] += 1
            entry.sum += value.isFinite ? value : 0
            entry.count += 1
            series[labelValues] = entry
        }
    }

    /// The number of observations for these label values.
    public func count(_ labelValues: [String] = []) -> Int {
        lock.withLock { series[labelValues]?.count ?? 0 }
    }

    func render(into text: inout String) {
        text += "# HELP \(name) \(help)\n# TYPE \(name) histogram\n"
        let snapshot = lock.withLock { series }
        for (labelValues, entry) in snapshot.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
            var cumulative = 0
            for (index, bound) in bounds.enumerated() {
                cumulative += entry.buckets[index]
                let labelText = renderLabels(names: labels, values: labelValues, extra: ("le", renderNumber(bound)))
                text += "\(name)_bucket\(labelText) \(cumulative)\n"
            }
            cumulative += entry.buckets[bounds.count]
            text += "\(name)_bucket\(renderLabels(names: labels, values: labelValues, extra: ("le", "+Inf"))) \(cumulative)\n"
            text += "\(name)_sum\(renderLabels(names: labels, values: labelValues)) \(entry.sum)\n"
            text += "\(name)_count\(renderLabels(names: labels, values: labelValues)) \(entry.count)\n"
        }
    }
}
