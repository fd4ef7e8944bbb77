import Reactive
import Synchronization

/// A metric family that can write itself in the text format.
protocol MetricFamily: AnyObject, Sendable {
    func render(into text: inout String)
}
