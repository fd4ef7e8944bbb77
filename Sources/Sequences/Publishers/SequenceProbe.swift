import Reactive
import Synchronization

/// Counters that let tests watch a sequence subscription's producer: how many elements it produced,
/// how much demand it was given, and whether it was cancelled or finished.
///
/// A test hook, `package` only: pass one to a publisher's package-level initializer (the `+Testing.swift`
/// files); every subscription made from that publisher reports to it. What a test reads is in
/// `SequenceProbe+Testing.swift`; this file holds what the producers write.
/// Counters only grow, so a test can read them at any time, from any thread. A subscription with no
/// probe pays nothing for this.
///
/// **Ownership:** retained by the publisher and by each subscription made from it, until the
/// subscription ends.
///
/// **Thread safety:** safe to call from any thread.
package final class SequenceProbe: Sendable {
    // The counters, written here and read by the tests' accessors (`SequenceProbe+Testing.swift`).
    let producedCount = Atomic<Int>(0)
    /// Total demand; `unlimitedDemand` once any demand was unlimited or the sum passed `Int.max`.
    let requestedDemand = Atomic<UInt>(0)
    let cancelledFlag = Atomic<Bool>(false)
    let finishedFlag = Atomic<Bool>(false)
    let startReachedFlag = Atomic<Bool>(false)

    static let unlimitedDemand = UInt.max

    /// Creates a probe with every counter at zero.
    package init() {}

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
