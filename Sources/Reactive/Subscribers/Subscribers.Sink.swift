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
    /// until completion or cancellation; it then releases its closures and subscription, as Combine
    /// does, so that a closure that captures the object holding the sink's cancellable leaks nothing.
    ///
    /// **Thread safety:** safe to call from any thread.
    public final class Sink<Input, Failure: Error>: Subscriber, Cancellable, CustomStringConvertible,
        CustomReflectable, @unchecked Sendable
    {
        // @unchecked Sendable: `state` and `completionHandler` are only touched inside `lock`;
        // `valueHandler` is written only while `gate` says nobody may be reading it (see there).

        /// The closure that runs for each value; a closure that does nothing once the sink completed
        /// or was cancelled.
        public var receiveValue: (Input) -> Void {
            guard gate.compareExchange(expected: Gate.open, desired: Gate.delivering, ordering: .acquiring).exchanged
            else { return { _ in } }
            let handler = valueHandler?._withUnsafeGuaranteedRef { $0.body } ?? { _ in }
            if !gate.compareExchange(expected: Gate.delivering, desired: Gate.open, ordering: .releasing).exchanged {
                releaseValueHandler()
            }
            return handler
        }

        /// The closure that runs on completion; a closure that does nothing once it ran or the sink
        /// was cancelled.
        public var receiveCompletion: (Subscribers.Completion<Failure>) -> Void {
            lock.withLock { completionHandler ?? { _ in } }
        }

        private enum State {
            /// Created, not yet subscribed. Next: `.subscribed` or `.terminal`.
            case awaitingSubscription
            /// Holding the upstream subscription. Next: `.terminal`.
            case subscribed(any Subscription)
            /// Completed or cancelled; nothing more is delivered.
            case terminal
        }

        /// The states of ``gate``: who may touch ``valueHandler``.
        @usableFromInline
        internal enum Gate {
            /// No values are delivered (not yet subscribed, or terminal). Next: `open`.
            @inlinable static var closed: Int { 0 }
            /// Values may be delivered; nobody is. Next: `delivering`, `closed`.
            @inlinable static var open: Int { 1 }
            /// A value is being delivered, on upstream's (serialized) path. Next: `open`, `closing`.
            @inlinable static var delivering: Int { 2 }
            /// Cancelled while a value was being delivered: the delivering thread releases the
            /// closure when it returns. Next: `closed`.
            @inlinable static var closing: Int { 3 }
        }

        private let lock = Lock()
        private var state: State = .awaitingSubscription  // Guarded by lock.
        /// Who may touch ``valueHandler``: the per-value path takes the delivery right with one
        /// compare-and-swap (`open` to `delivering`) and gives it back with another, without the
        /// lock. Whoever closes the gate while nobody delivers releases the closure; a cancel that
        /// finds a delivery in progress leaves that to the deliverer.
        @usableFromInline let gate = Atomic<Int>(Gate.closed)
        /// Read only by the holder of the delivery right; released (set to `nil`) when the gate closes.
        /// Held in a box this sink owns by hand (retained once in `init`), so that the per-value call
        /// retains and releases nothing: a closure read from a `var` is retained for the call.
        @usableFromInline @exclusivity(unchecked) var valueHandler: Unmanaged<HandlerBox>?

        /// Holds the value closure for ``valueHandler``.
        @usableFromInline
        internal final class HandlerBox {
            @usableFromInline let body: (Input) -> Void

            init(_ body: @escaping (Input) -> Void) {
                self.body = body
            }
        }
        // Released on completion or cancel.
        private var completionHandler: ((Subscribers.Completion<Failure>) -> Void)?  // Guarded by lock.

        /// Creates a sink with the given closures.
        public init(
            receiveCompletion: @escaping (Subscribers.Completion<Failure>) -> Void,
            receiveValue: @escaping (Input) -> Void
        ) {
            valueHandler = .passRetained(HandlerBox(receiveValue))
            completionHandler = receiveCompletion
        }

        deinit {
            valueHandler?.release()
        }

        public var description: String { "Sink" }

        public var customMirror: Mirror { Mirror(self, children: []) }

        public func receive(subscription: any Subscription) {
            let accepted = lock.withLock { () -> Bool in
                guard case .awaitingSubscription = state else { return false }
                state = .subscribed(subscription)
                gate.store(Gate.open, ordering: .releasing)
                return true
            }
            if accepted {
                subscription.request(.unlimited)
            } else {
                subscription.cancel()
            }
        }

        // The hot path: no lock, two uncontended compare-and-swaps. A value that races with a
        // cancel from another thread may still be delivered, as in Combine.
        @inlinable
        public func receive(_ value: Input) -> Subscribers.Demand {
            guard gate.compareExchange(expected: Gate.open, desired: Gate.delivering, ordering: .acquiring).exchanged
            else { return .none }
            valueHandler?._withUnsafeGuaranteedRef { $0.body(value) }
            if !gate.compareExchange(expected: Gate.delivering, desired: Gate.open, ordering: .releasing).exchanged {
                // Cancelled meanwhile (perhaps by `valueHandler` itself): the release is ours.
                releaseValueHandler()
            }
            return .none
        }

        public func receive(completion: Subscribers.Completion<Failure>) {
            let handler = lock.withLock { () -> ((Subscribers.Completion<Failure>) -> Void)? in
                guard case .subscribed = state else { return nil }
                state = .terminal
                defer { completionHandler = nil }
                return completionHandler
            }
            guard let handler else { return }
            // Upstream's calls are serialized, so no value is being delivered now.
            closeGate()
            handler(completion)
        }

        public func cancel() {
            let (subscription, completion, wasSubscribed) = lock.withLock {
                () -> ((any Subscription)?, ((Subscribers.Completion<Failure>) -> Void)?, Bool) in
                defer {
                    state = .terminal
                    completionHandler = nil
                }
                switch state {
                case .awaitingSubscription: return (nil, completionHandler, false)
                case .subscribed(let subscription): return (subscription, completionHandler, true)
                case .terminal: return (nil, nil, true)
                }
            }
            // Released here, outside the lock: a closure's captures may cancel this sink as they go.
            withExtendedLifetime(completion) {}
            if wasSubscribed {
                closeGate()
            } else {
                // Never subscribed: the gate never opened, and only this call saw the first state.
                releaseValueHandler()
            }
            subscription?.cancel()
        }

        /// Closes the gate; releases the value closure unless a delivery is in progress, whose thread
        /// then releases it.
        private func closeGate() {
            var current = gate.load(ordering: .acquiring)
            while true {
                switch current {
                case Gate.open:
                    let (exchanged, original) = gate.compareExchange(
                        expected: Gate.open,
                        desired: Gate.closed,
                        ordering: .acquiringAndReleasing
                    )
                    if exchanged {
                        releaseValueHandler()
                        return
                    }
                    current = original
                case Gate.delivering:
                    let (exchanged, original) = gate.compareExchange(
                        expected: Gate.delivering,
                        desired: Gate.closing,
                        ordering: .acquiringAndReleasing
                    )
                    if exchanged { return }
                    current = original
                default:
                    // Closed or closing already.
                    return
                }
            }
        }

        @usableFromInline
        internal func releaseValueHandler() {
            let handler = valueHandler
            valueHandler = nil
            gate.store(Gate.closed, ordering: .releasing)
            handler?.release()
        }
    }
}
