/// The subscription of `replaceEmpty` and `replaceError`: passes values and demand through, counting
/// downstream's outstanding demand, and when upstream completes in the way that calls for it delivers
/// one replacement value (at once if downstream has demand, else on its next request) and finishes.
///
/// Which completion calls for the replacement is the one difference between the two operators:
/// `replaceEmpty` replaces a `.finished` that came before any value and passes failures through
/// (``passFailure`` converts them); `replaceError` replaces any failure (``passFailure`` is `nil`:
/// its downstream cannot fail).
///
/// **Ownership:** retained by upstream (as its subscriber) and by downstream (as its subscription);
/// releases both on completion or cancel. Holds the replacement value until the stream ends.
///
/// **Thread safety:** `request` and `cancel` are safe from any thread; the machine is guarded by
/// the lock, which is never held while calling upstream or downstream.
internal final class ReplacingInner<UpstreamFailure: Error, Downstream: Subscriber>: Subscriber, Subscription,
    CustomStringConvertible, CustomPlaygroundDisplayConvertible
{
    typealias Input = Downstream.Input
    typealias Failure = UpstreamFailure

    private let lock = Lock()
    private var machine: ReplacingStateMachine<Downstream>  // Guarded by lock.
    private let replacement: Downstream.Input
    /// How an upstream failure reaches downstream; `nil` when a failure is what gets replaced.
    private let passFailure: ((UpstreamFailure) -> Downstream.Failure)?
    private let name: String

    /// `replaceEmpty`: an empty stream gets `replacement`; failures pass through.
    init(replacingEmptyWith replacement: Downstream.Input, downstream: Downstream)
    where Downstream.Failure == UpstreamFailure {
        machine = ReplacingStateMachine(downstream: downstream)
        self.replacement = replacement
        passFailure = { $0 }
        name = "ReplaceEmpty"
    }

    /// `replaceError`: a failure becomes `replacement` and a normal finish.
    init(replacingErrorWith replacement: Downstream.Input, downstream: Downstream)
    where Downstream.Failure == Never {
        machine = ReplacingStateMachine(downstream: downstream)
        self.replacement = replacement
        passFailure = nil
        name = "ReplaceError"
    }

    var description: String { name }

    var playgroundDescription: Any { description }

    func receive(subscription: any Subscription) {
        guard let downstream = lock.withLock({ machine.subscriptionReceived(subscription) }) else {
            subscription.cancel()
            return
        }
        downstream.receive(subscription: self)
    }

    func receive(_ input: Input) -> Subscribers.Demand {
        guard let downstream = lock.withLock({ machine.valueReceived() }) else { return .none }
        let more = downstream.receive(input)
        if more > 0 { lock.withLock { machine.demandReturned(more) } }
        return more
    }

    func receive(completion: Subscribers.Completion<Failure>) {
        let action = lock.withLock { () -> ReplacingStateMachine<Downstream>.ReplacementAction in
            let replaces: Bool
            switch completion {
            case .finished: replaces = passFailure != nil && !machine.hasSeenValue()  // replaceEmpty's case
            case .failure: replaces = passFailure == nil  // replaceError's case
            }
            if replaces { return machine.replacementNeeded() }
            return machine.upstreamCompleted().map { .finish($0) } ?? .none
        }
        switch action {
        case .none:
            break
        case .deliverReplacement(let downstream):
            deliverReplacement(to: downstream)
        case .finish(let downstream):
            if case .failure(let error) = completion, let passFailure {
                downstream.receive(completion: .failure(passFailure(error)))
            } else {
                downstream.receive(completion: .finished)
            }
        }
    }

    func request(_ demand: Subscribers.Demand) {
        if demand == .none { apiViolation("demand must not be zero") }
        switch lock.withLock({ machine.demandRequested(demand) }) {
        case .none:
            break
        case .request(let upstream, let demand):
            upstream.request(demand)
        case .deliverReplacement(let downstream):
            deliverReplacement(to: downstream)
        }
    }

    func cancel() {
        lock.withLock { machine.cancelled() }?.cancel()
    }

    private func deliverReplacement(to downstream: Downstream) {
        _ = downstream.receive(replacement)
        downstream.receive(completion: .finished)
    }
}
