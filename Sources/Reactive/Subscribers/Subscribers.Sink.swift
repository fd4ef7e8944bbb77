extension Publisher {
    /// Attaches a subscriber with closure-based behaviour, requesting an unlimited number of values.
    ///
    ///     let cancellable = [1, 2, 3].publisher.sink(
    ///         receiveCompletion: { print($0) }, receiveValue: { print($0) })
    ///     // Prints: 1 2 3 finished (one per line)
    ///
    /// - Returns: A cancellable that cancels the subscription when cancelled or deinitialized.
    public func sink(
        receiveCompletion: @escaping (Subscribers.Completion<Failure>) -> Void,
        receiveValue: @escaping (Output) -> Void
    ) -> AnyCancellable {
        let sink = Subscribers.Sink<Output, Failure>(receiveCompletion: receiveCompletion, receiveValue: receiveValue)
        subscribe(sink)
        return AnyCancellable(sink)
    }
}

extension Publisher where Failure == Never {
    /// Attaches a subscriber that runs `receiveValue` for every value of a publisher that cannot fail.
    public func sink(receiveValue: @escaping (Output) -> Void) -> AnyCancellable {
        sink(receiveCompletion: { _ in }, receiveValue: receiveValue)
    }
}

extension Subscribers {
    /// A simple subscriber that requests an unlimited number of values upon subscription.
    ///
    /// **Ownership:** retained by its subscription (and by the ``AnyCancellable`` that `sink` returns)
    /// until completion or cancellation; it then drops its closures and subscription, breaking cycles.
    ///
    /// **Thread safety:** safe to call from any thread.
    public final class Sink<Input, Failure: Error>: Subscriber, Cancellable, CustomStringConvertible,
        CustomReflectable, @unchecked Sendable
    {
        // @unchecked Sendable: `state` is only touched inside `lock`; the closures are immutable.

        /// The closure that runs for each value.
        public let receiveValue: (Input) -> Void

        /// The closure that runs on completion.
        public let receiveCompletion: (Subscribers.Completion<Failure>) -> Void

        private enum State {
            /// Created, not yet subscribed. Next: `.subscribed` or `.terminal`.
            case awaitingSubscription
            /// Holding the upstream subscription. Next: `.terminal`.
            case subscribed(any Subscription)
            /// Completed or cancelled; nothing more is delivered.
            case terminal
        }

        private let lock = Lock()
        private var state: State = .awaitingSubscription  // Guarded by lock.
        // Released on completion or cancel, so a chain that holds this sink frees itself.
        private var valueHandler: ((Input) -> Void)?  // Guarded by lock.
        private var completionHandler: ((Subscribers.Completion<Failure>) -> Void)?  // Guarded by lock.

        /// Creates a sink with the given closures.
        public init(
            receiveCompletion: @escaping (Subscribers.Completion<Failure>) -> Void,
            receiveValue: @escaping (Input) -> Void
        ) {
            self.receiveValue = receiveValue
            self.receiveCompletion = receiveCompletion
            valueHandler = receiveValue
            completionHandler = receiveCompletion
        }

        public var description: String { "Sink" }

        public var customMirror: Mirror { Mirror(self, children: []) }

        public func receive(subscription: any Subscription) {
            let accepted = lock.withLock { () -> Bool in
                guard case .awaitingSubscription = state else { return false }
                state = .subscribed(subscription)
                return true
            }
            if accepted {
                subscription.request(.unlimited)
            } else {
                subscription.cancel()
            }
        }

        public func receive(_ value: Input) -> Subscribers.Demand {
            // The hot path: copy the handler out inside the lock into a concrete local, so no
            // reabstraction thunk is allocated per value, then call it outside the lock.
            var handler: ((Input) -> Void)?
            lock.withLock {
                if case .subscribed = state { handler = valueHandler }
            }
            handler?(value)
            return .none
        }

        public func receive(completion: Subscribers.Completion<Failure>) {
            let handler = lock.withLock { () -> ((Subscribers.Completion<Failure>) -> Void)? in
                guard case .subscribed = state else { return nil }
                state = .terminal
                defer {
                    valueHandler = nil
                    completionHandler = nil
                }
                return completionHandler
            }
            handler?(completion)
        }

        public func cancel() {
            let subscription = lock.withLock { () -> (any Subscription)? in
                defer {
                    state = .terminal
                    valueHandler = nil
                    completionHandler = nil
                }
                guard case .subscribed(let subscription) = state else { return nil }
                return subscription
            }
            subscription?.cancel()
        }
    }
}
