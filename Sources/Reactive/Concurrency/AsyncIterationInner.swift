/// The states of one `values` iteration: at most one `next()` waits at a time, and each asks
/// upstream for exactly one value.
///
/// **Thread safety:** value type; guarded by its owner's lock.
internal struct AsyncIterationStateMachine<Output, Failure: Error> {
    typealias Continuation = UnsafeContinuation<UncheckedTransfer<Result<Output?, Failure>>, Never>

    private enum State {
        /// Subscribed to upstream, its subscription not here yet; `waiting` is a `next()` that came
        /// first. Next: `.subscribed`, `.terminal`.
        case awaitingSubscription(waiting: Continuation?)
        /// Upstream is running; `waiting` is the `next()` that asked for the value in flight.
        /// Next: `.terminal`.
        case subscribed(any Subscription, waiting: Continuation?)
        /// Upstream completed while nobody waited; the next `next()` gets it. Next: `.terminal`.
        case completed(Subscribers.Completion<Failure>)
        /// Done: finished, failed and reported, or cancelled. Every `next()` returns `nil`. Final.
        case terminal
    }

    /// What the owner does, outside the lock.
    enum Action {
        case none
        /// Ask upstream for one value.
        case request(any Subscription)
        /// Resume the waiting `next()`.
        case resume(Continuation, Result<Output?, Failure>)
        /// Cancel upstream, and resume the waiting `next()` (if any) with the end.
        case cancel((any Subscription)?, Continuation?)
    }

    private var state = State.awaitingSubscription(waiting: nil)

    /// Upstream's subscription arrived; `nil` means it must be cancelled (a duplicate, or too late).
    mutating func subscriptionReceived(_ subscription: any Subscription) -> Action? {
        guard case .awaitingSubscription(let waiting) = state else { return nil }
        state = .subscribed(subscription, waiting: waiting)
        return waiting == nil ? Action.none : .request(subscription)
    }

    /// A `next()` wants a value.
    mutating func nextCalled(_ continuation: Continuation) -> Action {
        switch state {
        case .awaitingSubscription(nil):
            state = .awaitingSubscription(waiting: continuation)
            return .none
        case .subscribed(let subscription, nil):
            state = .subscribed(subscription, waiting: continuation)
            return .request(subscription)
        case .completed(.finished), .terminal:
            state = .terminal
            return .resume(continuation, .success(nil))
        case .completed(.failure(let error)):
            state = .terminal
            return .resume(continuation, .failure(error))
        case .awaitingSubscription, .subscribed:
            internalInconsistency("next() called while another next() waits")
        }
    }

    /// Upstream sent a value; it goes to the waiting `next()`, or nowhere (nobody asked for it).
    mutating func valueReceived(_ value: Output) -> Action {
        guard case .subscribed(let subscription, let waiting?) = state else { return .none }
        state = .subscribed(subscription, waiting: nil)
        return .resume(waiting, .success(value))
    }

    mutating func completionReceived(_ completion: Subscribers.Completion<Failure>) -> Action {
        switch state {
        case .subscribed(_, let waiting?), .awaitingSubscription(let waiting?):
            state = .terminal
            switch completion {
            case .finished: return .resume(waiting, .success(nil))
            case .failure(let error): return .resume(waiting, .failure(error))
            }
        case .subscribed, .awaitingSubscription:
            state = .completed(completion)
            return .none
        case .completed, .terminal:
            return .none
        }
    }

    /// The awaiting task was cancelled, or the iterator went away.
    mutating func cancelled() -> Action {
        defer { state = .terminal }
        switch state {
        case .awaitingSubscription(let waiting): return .cancel(nil, waiting)
        case .subscribed(let subscription, let waiting): return .cancel(subscription, waiting)
        case .completed, .terminal: return .none
        }
    }
}

/// The subscriber behind ``AsyncPublisher`` and ``AsyncThrowingPublisher``: it asks upstream for one
/// value per `next()` and hands it to the waiting task.
///
/// **Ownership:** retained by its iterator's ``AsyncIterationLifetime`` and by upstream (as its
/// subscriber); the lifetime cancels it when the iterator is released, which breaks the cycle.
///
/// **Thread safety:** safe to call from any thread; no lock is held while calling upstream or
/// resuming a task.
internal final class AsyncIterationInner<Output, Failure: Error>: Subscriber, Cancellable,
    CustomStringConvertible, @unchecked Sendable
{
    // @unchecked Sendable: `machine` is only touched inside `lock`.
    typealias Input = Output
    typealias Machine = AsyncIterationStateMachine<Output, Failure>

    private let lock = Lock()
    private var machine = Machine()  // Guarded by lock.

    var description: String { "AsyncPublisher" }

    func receive(subscription: any Subscription) {
        guard let action = lock.withLock({ machine.subscriptionReceived(subscription) }) else {
            subscription.cancel()
            return
        }
        perform(action)
    }

    func receive(_ input: Output) -> Subscribers.Demand {
        perform(lock.withLock { machine.valueReceived(input) })
        return .none
    }

    func receive(completion: Subscribers.Completion<Failure>) {
        perform(lock.withLock { machine.completionReceived(completion) })
    }

    func cancel() {
        perform(lock.withLock { machine.cancelled() })
    }

    /// Waits for the next value: `nil` once upstream finished or the task was cancelled.
    func next() async -> Result<Output?, Failure> {
        await withTaskCancellationHandler {
            await withUnsafeContinuation { continuation in
                perform(lock.withLock { machine.nextCalled(continuation) })
            }.value
        } onCancel: {
            cancel()
        }
    }

    private func perform(_ action: Machine.Action) {
        switch action {
        case .none:
            break
        case .request(let subscription):
            subscription.request(.max(1))
        case .resume(let continuation, let result):
            continuation.resume(returning: UncheckedTransfer(value: result))
        case .cancel(let subscription, let continuation):
            subscription?.cancel()
            continuation?.resume(returning: UncheckedTransfer(value: .success(nil)))
        }
    }
}

/// Ends an iteration when the iterator that owns it is released: no subscription outlives its
/// iterator. Iterators are values, so they hold this one object, and the last copy to go cancels.
///
/// **Ownership:** retained only by the iterator (and its copies).
///
/// **Thread safety:** immutable.
internal final class AsyncIterationLifetime<Output, Failure: Error>: Sendable {
    let inner: AsyncIterationInner<Output, Failure>

    init<Upstream: Publisher>(subscribingTo upstream: Upstream)
    where Upstream.Output == Output, Upstream.Failure == Failure {
        inner = AsyncIterationInner()
        upstream.subscribe(inner)
    }

    deinit {
        inner.cancel()
    }
}
