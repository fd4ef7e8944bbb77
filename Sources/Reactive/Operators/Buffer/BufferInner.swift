/// The subscription `buffer` hands downstream; the relay subscriber it attaches to its upstream
/// calls its `receive` methods.
///
/// **Ownership:** retained by the upstream's relay subscriber and by the downstream; releases both
/// and the buffered elements on completion or cancel.
///
/// **Thread safety:** safe to call from any thread; deliveries are serialized.
internal final class BufferInner<Downstream: Subscriber>: Subscription, CustomStringConvertible,
    CustomReflectable, CustomPlaygroundDisplayConvertible, @unchecked Sendable
{
    // @unchecked Sendable: `machine` is only touched inside `lock`; the rest is immutable.
    typealias Input = Downstream.Input
    typealias Failure = Downstream.Failure
    typealias Machine = BufferStateMachine<Downstream>

    private let lock = Lock()
    private var machine: Machine  // Guarded by lock.
    private let initialDemand: Subscribers.Demand  // Immutable.
    private let makeError: (() -> Failure)?  // Immutable.

    init(
        downstream: Downstream,
        size: Int,
        prefetch: Publishers.PrefetchStrategy,
        whenFull: Publishers.BufferingStrategy<Failure>
    ) {
        let overflow: Machine.Overflow
        switch whenFull {
        case .dropNewest:
            overflow = .dropNewest
            makeError = nil
        case .dropOldest:
            overflow = .dropOldest
            makeError = nil
        case .customError(let make):
            overflow = .fail
            makeError = make
        }
        machine = Machine(downstream: downstream, size: size, keepFull: prefetch == .keepFull, overflow: overflow)
        initialDemand = prefetch == .keepFull ? .max(size) : .unlimited
    }

    var description: String { "Buffer" }

    var customMirror: Mirror { Mirror(self, children: []) }

    var playgroundDescription: Any { description }

    func receive(subscription: any Subscription) {
        guard let downstream = lock.withLock({ machine.subscribed(subscription) }) else {
            subscription.cancel()
            return
        }
        downstream.receive(subscription: self)
        subscription.request(initialDemand)
    }

    func receive(_ input: Input) -> Subscribers.Demand {
        let (action, refill) = lock.withLock { machine.received(input) }
        perform(action)
        return refill ? .max(1) : .none
    }

    func receive(completion: Subscribers.Completion<Failure>) {
        perform(lock.withLock { machine.completed(completion) })
    }

    func request(_ demand: Subscribers.Demand) {
        perform(lock.withLock { machine.requested(demand) })
    }

    func cancel() {
        perform(lock.withLock { machine.cancelled() })
    }

    private func perform(_ action: Machine.Action) {
        switch action {
        case .none:
            break
        case .cancel(let subscription):
            subscription.cancel()
        case .deliver(let downstream, let value):
            deliver(value, to: downstream, refill: nil)
        case .deliverBuffered(let downstream, let value, let refill):
            deliver(value, to: downstream, refill: refill)
        case .complete(let downstream, let completion):
            downstream.receive(completion: completion)
        case .makeCustomError(let upstream):
            upstream.cancel()
            guard let makeError else { internalInconsistency("overflow error without a closure") }
            let error = makeError()
            perform(lock.withLock { machine.failedWithCustomError(error) })
        }
    }

    /// The delivery loop: one thread at a time runs it, so downstream calls never overlap.
    private func deliver(_ first: Input, to downstream: Downstream, refill: (any Subscription)?) {
        var additional = downstream.receive(first)
        refill?.request(.max(1))
        while true {
            switch lock.withLock({ machine.delivered(additional) }) {
            case .deliver(let value, let refill):
                additional = downstream.receive(value)
                refill?.request(.max(1))
            case .complete(let completion):
                downstream.receive(completion: completion)
                return
            case .stop:
                return
            }
        }
    }
}
