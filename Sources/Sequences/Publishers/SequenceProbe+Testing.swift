import Reactive
import Synchronization

extension SequenceProbe {
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
}
