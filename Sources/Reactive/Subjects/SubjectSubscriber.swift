extension Publisher {
    /// Attaches the specified subject to this publisher: the subject sends what this publisher
    /// publishes, and the subject's subscribers' demand drives it.
    ///
    ///     let subject = PassthroughSubject<Int, Never>()
    ///     let c1 = subject.sink { print($0) }; let c2 = [1, 2].publisher.subscribe(subject)
    ///     // Prints: 1
    ///     //         2
    ///
    /// - Returns: A cancellable that cancels the upstream subscription when cancelled or deinitialized.
    public func subscribe<S: Subject>(_ subject: S) -> AnyCancellable where Failure == S.Failure, Output == S.Output {
        let subscriber = SubjectSubscriber(subject)
        subscribe(subscriber)
        return AnyCancellable(subscriber)
    }
}

extension AnySubscriber {
    /// Creates a type-erasing subscriber that sends everything it receives to a subject.
    public init<S: Subject>(_ s: S) where Input == S.Output, Failure == S.Failure {
        self.init(
            receiveSubscription: { s.send(subscription: $0) },
            receiveValue: {
                s.send($0)
                return .none
            },
            receiveCompletion: { s.send(completion: $0) }
        )
    }
}

/// The subscriber behind ``Publisher/subscribe(_:)-(Subject)``: forwards to a subject, and is
/// itself the subscription the subject sees, so that cancelling it cancels the upstream.
///
/// **Ownership:** retains the subject and the upstream subscription until completion or cancel.
///
/// **Thread safety:** safe to call from any thread.
internal final class SubjectSubscriber<Downstream: Subject>: Subscriber, Subscription, CustomStringConvertible,
    CustomReflectable, @unchecked Sendable
{
    // @unchecked Sendable: `state` is only touched inside `lock`.
    internal typealias Input = Downstream.Output
    internal typealias Failure = Downstream.Failure

    /// Whether the link between upstream and subject is up.
    private enum State {
        /// Waiting for the upstream subscription. Next: `.subscribed`, `.terminal`.
        case awaitingSubscription(Downstream)
        /// Forwarding. Next: `.terminal`.
        case subscribed(Downstream, any Subscription)
        /// Completed or cancelled; references released. Final.
        case terminal
    }

    private let lock = Lock()
    private var state: State  // Guarded by lock.

    internal init(_ subject: Downstream) {
        state = .awaitingSubscription(subject)
    }

    internal var description: String { "Subject" }

    internal var customMirror: Mirror { Mirror(self, children: []) }

    internal func receive(subscription: any Subscription) {
        let subject = lock.withLock { () -> Downstream? in
            guard case .awaitingSubscription(let subject) = state else { return nil }
            state = .subscribed(subject, subscription)
            return subject
        }
        guard let subject else {
            subscription.cancel()
            return
        }
        subject.send(subscription: self)
    }

    internal func receive(_ input: Input) -> Subscribers.Demand {
        let subject = lock.withLock { () -> Downstream? in
            guard case .subscribed(let subject, _) = state else { return nil }
            return subject
        }
        subject?.send(input)
        return .none
    }

    internal func receive(completion: Subscribers.Completion<Failure>) {
        let subject = lock.withLock { () -> Downstream? in
            guard case .subscribed(let subject, _) = state else { return nil }
            state = .terminal
            return subject
        }
        subject?.send(completion: completion)
    }

    internal func request(_ demand: Subscribers.Demand) {
        let upstream = lock.withLock { () -> (any Subscription)? in
            guard case .subscribed(_, let upstream) = state else { return nil }
            return upstream
        }
        upstream?.request(demand)
    }

    internal func cancel() {
        let upstream = lock.withLock { () -> (any Subscription)? in
            defer { state = .terminal }
            guard case .subscribed(_, let upstream) = state else { return nil }
            return upstream
        }
        upstream?.cancel()
    }
}
