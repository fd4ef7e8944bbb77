import Reactive
import Synchronization

/// The subscription behind every sequence publisher: it delivers a sequence's terms exactly as fast as
/// its subscriber asks for them.
///
/// `request(_:)` takes the lock once: the first caller with no emitter running becomes the emitter and
/// delivers, in a tight loop, until the demand it claimed is used up, then takes the lock again to
/// collect demand that arrived meanwhile (see ``SequenceSubscriptionStateMachine``). Per element it only
/// reads a relaxed atomic cancelled flag. The lock is never held while calling the subscriber.
///
/// A subscriber that is a `BatchSubscriber` (``Reactive``) gets the terms in batches, through one call per batch:
/// this class is compiled generic over its subscriber, so each call into it goes through witness tables.
///
/// **Ownership:** retained by its subscriber; it retains the subscriber until it finishes or is
/// cancelled, and then lets go (a running emitter lets go when it returns, after at most the element in
/// flight).
///
/// **Thread safety:** safe to call from any thread, concurrently and re-entrantly.
final class SequenceSubscription<Downstream: Subscriber>: Subscription, CustomStringConvertible, @unchecked Sendable
where Downstream.Input == Term, Downstream.Failure == Never {
    // @unchecked Sendable: `machine` is only touched inside `lock`. `downstream` and `cursor` are touched
    // inside `lock` while the machine is idle, and only by the emitter thread while it is delivering (the
    // machine hands them over inside the lock, so each hand-over is ordered). The rest is immutable or atomic.

    private let lock = Lock()
    private var machine = SequenceSubscriptionStateMachine()  // Guarded by lock.
    /// Set (inside the lock) by the first effective cancel; read per element by the emitter, without it.
    private let cancelledFlag = Atomic<Bool>(false)
    private let probe: SequenceProbe?  // Immutable.
    private let kind: SequenceKind  // Immutable.
    private var cursor: TermCursor  // Guarded by lock while idle; emitter-confined while delivering.
    private var downstream: Downstream?  // Guarded by lock while idle; emitter-confined while delivering.
    /// The same subscriber as `downstream` when it takes batches, else `nil`; set and released with it.
    private var batchDownstream: TermBatchReceiver?  // Guarded like `downstream`.

    init(kind: SequenceKind, downstream: Downstream, cursor: TermCursor, probe: SequenceProbe?) {
        self.kind = kind
        self.probe = probe
        self.cursor = cursor
        self.downstream = downstream
        self.batchDownstream = TermBatchReceiver(downstream)
    }

    var description: String { kind.displayName }

    func request(_ demand: Subscribers.Demand) {
        if demand == .none {
            apiViolation("a subscriber must request more than zero elements")
        }
        probe?.recordRequested(demand)
        let action = lock.withLock { machine.demandRequested(demand) }
        switch action {
        case .none:
            break
        case .startDelivering(let demand):
            deliver(demand: demand)
        }
    }

    func cancel() {
        var released: Downstream?
        var releasedBatch: TermBatchReceiver?
        let action = lock.withLock { () -> SequenceSubscriptionStateMachine.CancelAction in
            let action = machine.cancelled()
            switch action {
            case .none:
                break
            case .stopEmitter:
                cancelledFlag.store(true, ordering: .relaxed)
            case .release:
                cancelledFlag.store(true, ordering: .relaxed)
                swap(&released, &downstream)
                swap(&releasedBatch, &batchDownstream)
            }
            return action
        }
        if action != .none {
            probe?.recordCancelled()
        }
        // `released` goes out of scope here, outside the lock: a subscriber's deinit may call back in.
        _ = released
        _ = releasedBatch
    }

    /// Runs the emitter: delivers until demand runs out with none collected, the sequence ends, or a cancel.
    ///
    /// Called only by the thread the machine just made the emitter, which owns `downstream` and `cursor`.
    private func deliver(demand: Subscribers.Demand) {
        guard let downstream else {
            internalInconsistency("an emitter started without a downstream")
        }
        let batchDownstream = self.batchDownstream
        var demand = demand
        while true {
            let outcome =
                if let batchDownstream {
                    cursor.deliver(demand: demand, inBatchesTo: batchDownstream, cancelled: cancelledFlag, probe: probe)
                } else {
                    cursor.deliver(demand: demand, to: downstream, cancelled: cancelledFlag, probe: probe)
                }
            switch outcome {
            case .cancelled:
                // The cancel that set the flag left the downstream to this emitter.
                releaseDownstream()
                return
            case .ended:
                let action = lock.withLock { machine.sequenceEnded() }
                releaseDownstream()
                if action == .finish {
                    probe?.recordFinished()
                    downstream.receive(completion: .finished)
                }
                return
            case .demandExhausted:
                let action = lock.withLock { machine.demandExhausted() }
                switch action {
                case .continueDelivering(let more):
                    demand = more
                case .stop:
                    return
                case .release:
                    releaseDownstream()
                    return
                }
            }
        }
    }

    /// Lets go of the subscriber; only the emitter calls it, when it stops for good.
    private func releaseDownstream() {
        downstream = nil
        batchDownstream = nil
    }
}
