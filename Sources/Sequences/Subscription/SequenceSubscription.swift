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
/// **Ownership:** retained by its subscriber; it retains the subscriber until it finishes or is
/// cancelled, and then lets go (a running emitter lets go when it returns, after at most the element in
/// flight).
///
/// **Thread safety:** safe to call from any thread, concurrently and re-entrantly.
final class SequenceSubscription<Downstream: Subscriber>: Subscription, CustomStringConvertible, @unchecked Sendable
where Downstream.Input == Term, Downstream.Failure == Never {
    // @unchecked Sendable: `machine` is only touched inside `lock`; while delivering, the downstream and the
    // source belong to the one emitter thread that the machine handed them to; the rest is immutable or atomic.

    private let lock = Lock()
    private var machine: SequenceSubscriptionStateMachine<Downstream>  // Guarded by lock.
    /// Set (inside the lock) by the first effective cancel; read per element by the emitter, without it.
    private let cancelledFlag = Atomic<Bool>(false)
    private let probe: SequenceProbe?  // Immutable.
    private let kind: SequenceKind  // Immutable.

    init(kind: SequenceKind, downstream: Downstream, source: TermSource, probe: SequenceProbe?) {
        self.kind = kind
        self.probe = probe
        machine = SequenceSubscriptionStateMachine(downstream: downstream, source: source)
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
        case .startDelivering(let downstream, let source, let demand):
            deliver(to: downstream, from: source, demand: demand)
        }
    }

    func cancel() {
        let action = lock.withLock { () -> SequenceSubscriptionStateMachine<Downstream>.CancelAction in
            let action = machine.cancelled()
            switch action {
            case .none:
                break
            case .stopEmitter, .release:
                cancelledFlag.store(true, ordering: .relaxed)
            }
            return action
        }
        switch action {
        case .none:
            break
        case .stopEmitter:
            probe?.recordCancelled()
        case .release:
            // The downstream and source go out of scope here, outside the lock: a subscriber's deinit may
            // call back into this subscription.
            probe?.recordCancelled()
        }
    }

    /// Runs the emitter: delivers until demand runs out with none collected, the sequence ends, or a cancel.
    private func deliver(to downstream: Downstream, from source: TermSource, demand: Subscribers.Demand) {
        var downstream = downstream
        var source = source
        var demand = demand
        while true {
            switch source.deliver(demand: demand, to: downstream, cancelled: cancelledFlag, probe: probe) {
            case .cancelled:
                return
            case .ended:
                let action = lock.withLock { machine.sequenceEnded() }
                if case .finish = action {
                    probe?.recordFinished()
                    downstream.receive(completion: .finished)
                }
                return
            case .demandExhausted:
                let action = lock.withLock { machine.demandExhausted(downstream: downstream, source: source) }
                switch action {
                case .continueDelivering(let nextDownstream, let nextSource, let more):
                    downstream = nextDownstream
                    source = nextSource
                    demand = more
                case .stop, .release:
                    return
                }
            }
        }
    }
}
