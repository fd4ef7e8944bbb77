import Reactive
import Synchronization

/// Counters that let tests watch a sequence subscription's producer: how many elements it produced,
/// how much demand it was given, and whether it was cancelled or finished.
///
/// A test hook, `package` only: pass one to a publisher's package-level initializer (the `+Testing.swift`
/// files); every subscription made from that publisher reports to it.
/// Counters only grow, so a test can read them at any time, from any thread. A subscription with no
/// probe pays nothing for this.
///
/// **Ownership:** retained by the publisher and by each subscription made from it, until the
/// subscription ends.
///
/// **Thread safety:** safe to call from any thread.
package final class SequenceProbe: Sendable {
    private let producedCount = Atomic<Int>(0)
    /// Total demand; `unlimitedDemand` once any demand was unlimited or the sum passed `Int.max`.
    private let requestedDemand = Atomic<UInt>(0)
    private let cancelledFlag = Atomic<Bool>(false)
    private let finishedFlag = Atomic<Bool>(false)
    private let startReachedFlag = Atomic<Bool>(false)

    private static let unlimitedDemand = UInt.max

    /// Creates a probe with every counter at zero.
    package init() {}

    /// The number of elements handed to subscribers so far. It counts an element just before the
    /// subscriber's `receive(_:)` is called, so inside that call it already includes that element (and
    /// a batch, just before `BatchSubscriber.receive(batch:)`: inside it, the whole batch).
    package var produced: Int {
        producedCount.load(ordering: .acquiring)
    }

    /// The total demand subscribers asked for: every `request(_:)` plus every demand returned from
    /// `receive(_:)`, with `.unlimited` absorbing.
    package var requested: Subscribers.Demand {
        let raw = requestedDemand.load(ordering: .acquiring)
        return raw == Self.unlimitedDemand ? .unlimited : .max(Int(raw))
    }

    /// Whether a cancel reached the producer (of any subscription made with this probe).
    package var isCancelled: Bool {
        cancelledFlag.load(ordering: .acquiring)
    }

    /// Whether the producer sent `.finished` (to any subscription made with this probe).
    package var isFinished: Bool {
        finishedFlag.load(ordering: .acquiring)
    }

    /// Whether the work of reaching `start` (skipping the elements before it) was completed, by a
    /// subscription's first delivery or by ``SequencePublisher/reachingStart(isCancelled:)``.
    package var isStartReached: Bool {
        startReachedFlag.load(ordering: .acquiring)
    }

    func recordStartReached() {
        startReachedFlag.store(true, ordering: .releasing)
    }

    func recordProduced() {
        producedCount.wrappingAdd(1, ordering: .releasing)
    }

    func recordProduced(_ count: Int) {
        producedCount.wrappingAdd(count, ordering: .releasing)
    }

    func recordRequested(_ demand: Subscribers.Demand) {
        var current = requestedDemand.load(ordering: .relaxed)
        while current != Self.unlimitedDemand {
            let next: UInt
            if let finite = demand.max {
                let (sum, overflow) = current.addingReportingOverflow(UInt(finite))
                next = overflow || sum > UInt(Int.max) ? Self.unlimitedDemand : sum
            } else {
                next = Self.unlimitedDemand
            }
            let (exchanged, original) = requestedDemand.compareExchange(
                expected: current,
                desired: next,
                ordering: .acquiringAndReleasing
            )
            if exchanged { return }
            current = original
        }
    }

    func recordCancelled() {
        cancelledFlag.store(true, ordering: .releasing)
    }

    func recordFinished() {
        finishedFlag.store(true, ordering: .releasing)
    }
}
