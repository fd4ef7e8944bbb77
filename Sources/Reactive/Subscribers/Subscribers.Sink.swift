import Synchronization

extension Publisher {
    /// Attaches a subscriber with closure-based behaviour, requesting an unlimited number of values.
    ///
    ///     let cancellable = [1, 2, 3].publisher.sink(
    ///         receiveCompletion: { print($0) }, receiveValue: { print($0) })
    ///     // Prints: 1 2 3 finished (one per line)
    ///
    /// - Returns: A cancellable that cancels the subscription when cancelled or deinitialized.
    @inlinable
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
    @inlinable
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
        // @unchecked Sendable: `state` is only touched inside `lock`; `delivers` is atomic; the
        // closures are immutable.

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
        /// Whether `state` is `.subscribed`: set (under the lock) before the subscription is asked
        /// for values, cleared (under the lock) on completion or cancel. The per-value path reads
        /// only this, without the lock, and calls the immutable `receiveValue`.
        @usableFromInline let delivers = Atomic<Bool>(false)
        // Released on completion or cancel.
        private var completionHandler: ((Subscribers.Completion<Failure>) -> Void)?  // Guarded by lock.

        /// Creates a sink with the given closures.
        public init(
            receiveCompletion: @escaping (Subscribers.Completion<Failure>) -> Void,
            receiveValue: @escaping (Input) -> Void
        ) {
            self.receiveValue = receiveValue
            self.receiveCompletion = receiveCompletion
            completionHandler = receiveCompletion
        }

        public var description: String { "Sink" }

        public var customMirror: Mirror { Mirror(self, children: []) }

        public func receive(subscription: any Subscription) {
            let accepted = lock.withLock { () -> Bool in
                guard case .awaitingSubscription = state else { return false }
                state = .subscribed(subscription)
                delivers.store(true, ordering: .releasing)
                return true
            }
            if accepted {
                subscription.request(.unlimited)
            } else {
                subscription.cancel()
            }
        }

        // The hot path: no lock, one atomic load (a plain load on x86 and arm64). A value that
        // races with a cancel from another thread may still be delivered, as with a lock (the
        // handler would be copied out before the cancel and called after it).
        @inlinable
        public func receive(_ value: Input) -> Subscribers.Demand {
            if delivers.load(ordering: .acquiring) {
                receiveValue(value)
            }
            return .none
        }

        public func receive(completion: Subscribers.Completion<Failure>) {
            let handler = lock.withLock { () -> ((Subscribers.Completion<Failure>) -> Void)? in
                guard case .subscribed = state else { return nil }
                state = .terminal
                delivers.store(false, ordering: .releasing)
                defer {
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
                    delivers.store(false, ordering: .releasing)
                    completionHandler = nil
                }
                guard case .subscribed(let subscription) = state else { return nil }
                return subscription
            }
            subscription?.cancel()
        }
    }
}
