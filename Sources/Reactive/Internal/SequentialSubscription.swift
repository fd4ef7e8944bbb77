/// The subscription downstream sees from an operator that reads its upstreams one after another
/// (`catch`, `retry`, `append`/`prepend`): it owns the ``SequentialStateMachine`` and does what the
/// three have in common, handing over the first upstream's subscription, passing values and the demand
/// downstream has not used up from one upstream to the next, and `request` and `cancel`. What happens
/// when an upstream completes is the operator's: it gets each completion, with its generation, from
/// ``source(generation:onCompletion:)``, and moves the machine on under ``lock``.
///
/// **Ownership:** retained by downstream and by the current upstream's ``SequentialSource``; it does
/// not retain the operator (the operator's completion closures do, in the sources).
///
/// **Thread safety:** `request` and `cancel` are safe from any thread; the machine, and whatever state
/// an operator keeps beside it, is guarded by ``lock``, never held while calling upstream or downstream.
internal final class SequentialSubscription<Downstream: Subscriber>: Subscription, CustomStringConvertible,
    CustomPlaygroundDisplayConvertible
{
    let lock = Lock()
    var machine: SequentialStateMachine<Downstream>  // Guarded by lock.
    let description: String

    init(downstream: Downstream, name: String) {
        machine = SequentialStateMachine(downstream: downstream)
        description = name
    }

    var playgroundDescription: Any { description }

    /// Runs `body` on the machine under ``lock``; an operator's own state beside it may be touched there too.
    func withMachine<R>(_ body: (inout SequentialStateMachine<Downstream>) -> R) -> R {
        lock.withLock { body(&machine) }
    }

    func request(_ demand: Subscribers.Demand) {
        if demand == .none { apiViolation("demand must not be zero") }
        lock.withLock { machine.demandRequested(demand) }?.request(demand)
    }

    func cancel() {
        lock.withLock { machine.cancelled() }?.cancel()
    }

    /// The subscriber for the upstream of `generation`: its subscription and values come here, its
    /// completion goes to `onCompletion`.
    func source<Failure: Error>(
        generation: Int,
        onCompletion: @escaping (Subscribers.Completion<Failure>, Int) -> Void
    ) -> SequentialSource<Downstream.Input, Failure> {
        SequentialSource(
            name: description,
            generation: generation,
            onSubscription: { [self] in received(subscription: $0, generation: $1) },
            onValue: { [self] in received($0, generation: $1) },
            onCompletion: onCompletion
        )
    }

    private func received(subscription: any Subscription, generation: Int) {
        switch lock.withLock({ machine.subscriptionReceived(subscription, generation: generation) }) {
        case .cancel: subscription.cancel()
        case .handOver(let downstream): downstream.receive(subscription: self)
        case .request(let demand): subscription.request(demand)
        case .none: break
        }
    }

    private func received(_ input: Downstream.Input, generation: Int) -> Subscribers.Demand {
        guard let downstream = lock.withLock({ machine.valueReceived(generation: generation) }) else { return .none }
        let more = downstream.receive(input)
        if more > 0 { lock.withLock { machine.demandReturned(more, generation: generation) } }
        return more
    }
}
