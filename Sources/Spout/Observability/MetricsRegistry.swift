import Reactive
import Synchronization

/// A set of metric families rendered together in the Prometheus text exposition format (0.0.4).
///
/// **Ownership:** created once by the service and shared by every route.
///
/// **Thread safety:** safe to call from any thread; each family has its own lock.
final class MetricsRegistry: @unchecked Sendable {
    // @unchecked Sendable: `families` is only touched inside `lock`; families lock themselves.
    private let lock = Lock()
    private var families: [any MetricFamily] = []  // Guarded by lock.

    /// Creates an empty registry.
    init() {}

    /// Registers and returns a counter family.
    func counter(_ name: String, help: String, labels: [String] = []) -> CounterFamily {
        register(CounterFamily(name: name, help: help, labels: labels))
    }

    /// Registers and returns a gauge.
    func gauge(_ name: String, help: String) -> Gauge {
        register(Gauge(name: name, help: help))
    }

    /// Registers and returns a gauge family with labels.
    func gauge(_ name: String, help: String, labels: [String]) -> GaugeFamily {
        register(GaugeFamily(name: name, help: help, labels: labels))
    }

    /// Registers and returns a gauge whose value is read from a source at each render.
    func sampledGauge(_ name: String, help: String) -> SampledGauge {
        register(SampledGauge(name: name, help: help))
    }

    /// Registers and returns a histogram family with the given upper bucket bounds (ascending).
    func histogram(_ name: String, help: String, buckets: [Double], labels: [String] = []) -> HistogramFamily {
        register(HistogramFamily(name: name, help: help, buckets: buckets, labels: labels))
    }

    /// The whole registry in the Prometheus text format.
    func render() -> String {
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
