import Reactive

/// The demand-and-delivery state of one sequence subscription: who may deliver, and how much.
///
/// At most one thread, the *emitter*, delivers at a time. It takes the downstream and the source out of
/// the machine when it starts, so it needs no lock per element, and hands them back when its demand runs
/// out. Demand requested meanwhile, from inside `receive(_:)` or from another thread, only adds to
/// `pending`, which the emitter collects when its own demand is used up: a subscriber that requests one
/// more from inside each `receive(_:)` makes the emitter loop, never recurse.
///
/// **Ownership:** stored inline in its ``SequenceSubscription``.
///
/// **Thread safety:** value type; its owner calls it only with its lock held.
struct SequenceSubscriptionStateMachine<Downstream> {
    private enum State {
        /// Subscribed, nobody delivering, no demand outstanding. Holds what the next emitter needs.
        /// Next: `.delivering` (demand requested) or `.terminal` (cancelled).
        case idle(downstream: Downstream, source: TermSource)
        /// One thread is delivering and holds the downstream and the source; `pending` is the demand
        /// requested since it last collected. Next: `.delivering` (it collected), `.idle` (demand used up)
        /// or `.terminal` (finished or cancelled).
        case delivering(pending: Subscribers.Demand)
        /// Finished or cancelled: nothing more is delivered and nothing is held. Final.
        case terminal
    }

    /// What to do after ``demandRequested(_:)``.
    enum RequestAction {
        /// Nothing: an emitter will pick the demand up, or the subscription is over.
        case none
        /// Become the emitter: deliver `demand` elements from `source` to `downstream`.
        case startDelivering(downstream: Downstream, source: TermSource, demand: Subscribers.Demand)
    }

    /// What the emitter does after ``demandExhausted(downstream:source:)``.
    enum ExhaustedAction {
        /// Keep delivering: `demand` more was requested meanwhile. Hands the downstream and source back.
        case continueDelivering(downstream: Downstream, source: TermSource, demand: Subscribers.Demand)
        /// Stop: the machine holds the downstream and source again, idle.
        case stop
        /// Stop and drop them (outside the lock): the subscription was cancelled meanwhile.
        case release(downstream: Downstream, source: TermSource)
    }

    /// What to do after ``cancelled()``.
    enum CancelAction {
        /// Nothing: the subscription had already finished or been cancelled.
        case none
        /// Nothing more here: the running emitter notices the cancelled flag and drops what it holds.
        case stopEmitter
        /// Drop the downstream and source (outside the lock).
        case release(downstream: Downstream, source: TermSource)
    }

    /// What the emitter does after ``sequenceEnded()``.
    enum EndAction {
        /// Send `.finished` downstream.
        case finish
        /// Send nothing: the subscription was cancelled meanwhile.
        case none
    }

    private var state: State

    init(downstream: Downstream, source: TermSource) {
        state = .idle(downstream: downstream, source: source)
    }

    /// Whether the subscription is over (finished or cancelled).
    var isTerminal: Bool {
        if case .terminal = state { return true }
        return false
    }

    /// The subscriber requested `demand` (more than zero).
    mutating func demandRequested(_ demand: Subscribers.Demand) -> RequestAction {
        switch state {
        case .idle(let downstream, let source):
            state = .delivering(pending: .none)
            return .startDelivering(downstream: downstream, source: source, demand: demand)
        case .delivering(let pending):
            state = .delivering(pending: pending + demand)
            return .none
        case .terminal:
            return .none
        }
    }

    /// The emitter delivered all the demand it had; it hands back the downstream and the source.
    mutating func demandExhausted(downstream: Downstream, source: TermSource) -> ExhaustedAction {
        switch state {
        case .delivering(let pending) where pending > 0:
            state = .delivering(pending: .none)
            return .continueDelivering(downstream: downstream, source: source, demand: pending)
        case .delivering:
            state = .idle(downstream: downstream, source: source)
            return .stop
        case .terminal:
            return .release(downstream: downstream, source: source)
        case .idle:
            internalInconsistency("demandExhausted() in \(state)")
        }
    }

    /// The emitter delivered the last element, or the sequence ran out.
    mutating func sequenceEnded() -> EndAction {
        switch state {
        case .delivering:
            state = .terminal
            return .finish
        case .terminal:
            return .none
        case .idle:
            internalInconsistency("sequenceEnded() in \(state)")
        }
    }

    /// The subscriber cancelled.
    mutating func cancelled() -> CancelAction {
        switch state {
        case .idle(let downstream, let source):
            state = .terminal
            return .release(downstream: downstream, source: source)
        case .delivering:
            state = .terminal
            return .stopEmitter
        case .terminal:
            return .none
        }
    }
}
