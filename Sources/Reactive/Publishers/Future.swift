/// A publisher that eventually produces a single value and then finishes, or fails.
///
/// The closure given to ``init(_:)`` runs once, at once, and is handed a ``Promise`` to fulfil
/// from any thread. The result is kept and replayed: every subscriber, before or after the
/// promise is fulfilled, receives the same value (on its first demand) and finishes, or receives
/// the same failure.
///
///     let future = Future<Int, Never> { promise in promise(.success(42)) }
///     let cancellable = future.sink { print($0) }
///     // Prints: 42
///
/// **Ownership:** the promise retains the future until it is fulfilled; the future retains
/// its waiting subscriptions until then, and keeps the result afterwards.
///
/// **Thread safety:** safe to call from any thread; the promise may be fulfilled from any
/// thread, and only its first call counts.
public final class Future<Output, Failure: Error>: Publisher, CustomStringConvertible, @unchecked Sendable {
    // @unchecked Sendable: `state` is only touched inside `lock`.

    /// A function the future's closure calls, once, with the eventual result.
    ///
    /// It is `@Sendable` so that it can be called from another thread or queue under Swift 6;
    /// Combine's is not marked, which makes no difference to callers.
    public typealias Promise = @Sendable (Result<Output, Failure>) -> Void

    /// Whether the result is known.
    private enum State {
        /// Not fulfilled; these subscriptions wait for the result. Next: `.fulfilled`.
        case pending([FutureSubscriptionBase<Output, Failure>])
        /// Fulfilled; the result is replayed to every subscriber. Final.
        case fulfilled(Result<Output, Failure>)
    }

    private let lock = Lock()
    private var state: State = .pending([])  // Guarded by lock.

    /// Creates a future and runs `attemptToFulfill` at once, handing it the promise.
    ///
    /// > Warning: Only the first call of the promise counts; later calls are ignored.
    public init(_ attemptToFulfill: @escaping (@escaping Promise) -> Void) {
        attemptToFulfill { [self] result in fulfil(result) }
    }

    public var description: String { "Future" }

    public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
        let subscription = FutureSubscription(downstream: subscriber, parent: self)
        let result = lock.withLock { () -> Result<Output, Failure>? in
            switch state {
            case .pending(var waiting):
                state = .pending([])
                waiting.append(subscription)
                state = .pending(waiting)
                return nil
            case .fulfilled(let result):
                return result
            }
        }
        subscription.start(result: result)
    }

    private func fulfil(_ result: Result<Output, Failure>) {
        let waiting = lock.withLock { () -> [FutureSubscriptionBase<Output, Failure>] in
            guard case .pending(let waiting) = state else { return [] }
            state = .fulfilled(result)
            return waiting
        }
        for subscription in waiting {
            subscription.fulfil(result)
        }
    }

    /// Forgets a cancelled subscription that was still waiting.
    fileprivate func remove(_ id: ObjectIdentifier) {
        lock.withLock {
            guard case .pending(var waiting) = state else { return }
            state = .pending([])
            waiting.removeAll { ObjectIdentifier($0) == id }
            state = .pending(waiting)
        }
    }
}

/// The type-erased face of a subscription waiting for a ``Future``'s result.
///
/// **Thread safety:** safe to call from any thread.
private class FutureSubscriptionBase<Output, Failure: Error>: @unchecked Sendable {
    // @unchecked Sendable: no state here; the subclass guards its state with its lock.

    func fulfil(_ result: Result<Output, Failure>) {
        internalInconsistency("abstract FutureSubscriptionBase.fulfil called")
    }
}

/// One subscriber's subscription to a ``Future``: delivers the result once it is known and,
/// for a value, once the subscriber has asked for one.
///
/// **Ownership:** retained by its subscriber and, while the future is pending, by the future.
/// Retains the subscriber and the future until it completes or is cancelled.
///
/// **Thread safety:** safe to call from any thread.
private final class FutureSubscription<Downstream: Subscriber>: FutureSubscriptionBase<
    Downstream.Input, Downstream.Failure
>, Subscription, CustomStringConvertible, CustomReflectable, @unchecked Sendable
{
    // @unchecked Sendable: `machine` is only touched inside `lock`.
    typealias Output = Downstream.Input
    typealias Failure = Downstream.Failure

    private let lock = Lock()
    private var machine: FutureSubscriptionStateMachine<Downstream>  // Guarded by lock.

    init(downstream: Downstream, parent: Future<Output, Failure>) {
        machine = FutureSubscriptionStateMachine(downstream: downstream, parent: parent)
    }

    var description: String { "Future" }

    var customMirror: Mirror { Mirror(self, children: []) }

    /// Hands the subscription to the subscriber, then delivers what became possible meanwhile.
    func start(result: Result<Output, Failure>?) {
        guard let downstream = lock.withLock({ machine.subscribing(result: result) }) else { return }
        downstream.receive(subscription: self)
        perform(lock.withLock { machine.subscribed() })
    }

    override func fulfil(_ result: Result<Output, Failure>) {
        perform(lock.withLock { machine.fulfilled(result) })
    }

    func request(_ demand: Subscribers.Demand) {
        if demand == .none {
            apiViolation("a subscription's demand must be greater than zero")
        }
        perform(lock.withLock { machine.demanded() })
    }

    func cancel() {
        let parent = lock.withLock { machine.cancelled() }
        parent?.remove(ObjectIdentifier(self))
    }

    private func perform(_ action: FutureSubscriptionStateMachine<Downstream>.Action) {
        switch action {
        case .none:
            break
        case .fail(let downstream, let error):
            downstream.receive(completion: .failure(error))
        case .deliver(let downstream, let value):
            _ = downstream.receive(value)
            if lock.withLock({ machine.delivered() }) {
                downstream.receive(completion: .finished)
            }
        }
    }
}

/// The progress of one ``FutureSubscription``.
///
/// **Thread safety:** value type; its owner keeps it behind a lock.
private struct FutureSubscriptionStateMachine<Downstream: Subscriber> {
    typealias Output = Downstream.Input
    typealias Failure = Downstream.Failure

    /// What the subscription knows, and who may call the subscriber.
    private enum State {
        /// Created; `receive(subscription:)` not yet called; holds a result that arrived this early.
        /// Next: `.subscribing`, `.terminal`.
        case created(Downstream, Future<Output, Failure>, Result<Output, Failure>?)
        /// `receive(subscription:)` in progress on the subscribing thread; results and demand wait.
        /// Next: `.waiting`, `.delivering`, `.terminal`.
        case subscribing(Downstream, Future<Output, Failure>, Result<Output, Failure>?, demanded: Bool)
        /// Subscribed, waiting for the result or for demand. Next: `.delivering`, `.terminal`.
        case waiting(Downstream, Future<Output, Failure>, Result<Output, Failure>?, demanded: Bool)
        /// The value is being received; `.finished` follows unless cancelled. Next: `.terminal`.
        case delivering
        /// Completed or cancelled; everything released. Final.
        case terminal
    }

    enum Action {
        case none
        case deliver(Downstream, Output)
        case fail(Downstream, Failure)
    }

    private var state: State

    init(downstream: Downstream, parent: Future<Output, Failure>) {
        state = .created(downstream, parent, nil)
    }

    mutating func subscribing(result: Result<Output, Failure>?) -> Downstream? {
        guard case .created(let downstream, let parent, let early) = state else { return nil }
        // The future may have been fulfilled between registering this subscription and starting it.
        state = .subscribing(downstream, parent, result ?? early, demanded: false)
        return downstream
    }

    mutating func subscribed() -> Action {
        guard case .subscribing(let downstream, let parent, let result, let demanded) = state else { return .none }
        return settle(downstream, parent, result, demanded)
    }

    mutating func fulfilled(_ result: Result<Output, Failure>) -> Action {
        switch state {
        case .created(let downstream, let parent, _):
            state = .created(downstream, parent, result)
            return .none
        case .subscribing(let downstream, let parent, nil, let demanded):
            state = .subscribing(downstream, parent, result, demanded: demanded)
            return .none
        case .waiting(let downstream, let parent, nil, let demanded):
            return settle(downstream, parent, result, demanded)
        case .subscribing, .waiting, .delivering, .terminal:
            return .none
        }
    }

    mutating func demanded() -> Action {
        switch state {
        case .subscribing(let downstream, let parent, let result, _):
            state = .subscribing(downstream, parent, result, demanded: true)
            return .none
        case .waiting(let downstream, let parent, let result, _):
            return settle(downstream, parent, result, true)
        case .created, .delivering, .terminal:
            return .none
        }
    }

    /// - Returns: Whether to send `.finished` (not if cancelled while the value was received).
    mutating func delivered() -> Bool {
        guard case .delivering = state else { return false }
        state = .terminal
        return true
    }

    /// - Returns: The future to tell, unless the subscription had already ended.
    mutating func cancelled() -> Future<Output, Failure>? {
        switch state {
        case .created(_, let parent, _), .subscribing(_, let parent, _, _), .waiting(_, let parent, _, _):
            state = .terminal
            return parent
        case .delivering, .terminal:
            state = .terminal
            return nil
        }
    }

    private mutating func settle(
        _ downstream: Downstream,
        _ parent: Future<Output, Failure>,
        _ result: Result<Output, Failure>?,
        _ demanded: Bool
    ) -> Action {
        switch result {
        case .failure(let error):
            state = .terminal
            return .fail(downstream, error)
        case .success(let value) where demanded:
            state = .delivering
            return .deliver(downstream, value)
        case .success, nil:
            state = .waiting(downstream, parent, result, demanded: demanded)
            return .none
        }
    }
}
