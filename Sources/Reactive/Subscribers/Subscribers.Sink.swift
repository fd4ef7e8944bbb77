import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

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
        sink.whileHoldingDeliveryRight { subscribe(sink) }
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
        // `valueHandler` is read only by a holder of the delivery right that `gate` counts (see there).

        /// The closure that runs for each value; a closure that does nothing once the sink completed
        /// or was cancelled.
        public var receiveValue: (Input) -> Void {
            guard enterGate() else { return { _ in } }
            let handler = valueHandler?._withUnsafeGuaranteedRef { $0.body } ?? { _ in }
            leaveGate()
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

        /// The bits of ``gate``.
        @usableFromInline
        internal enum Gate {
            /// Set: no value may start being delivered (not yet subscribed, or terminal).
            @inlinable static var closed: Int { 1 }
            /// Set (with `closed`) once the sink completed or was cancelled; never cleared.
            @inlinable static var done: Int { 2 }
            /// One holder of the delivery right; the gate counts them above the two flags.
            @inlinable static var holder: Int { 4 }
        }

        private let lock = Lock()
        private var state: State = .awaitingSubscription  // Guarded by lock.
        /// Who may touch ``valueHandler``: the ``Gate`` flags and, above them, the number of holders of
        /// the delivery right. A thread that subscribes this sink through ``Publisher/sink(receiveCompletion:receiveValue:)``
        /// holds a right for the whole `subscribe` call, and a thread that gets the subscription holds one
        /// for the sink's own `request(.unlimited)` (see ``requester``): a value that the publisher
        /// delivers inside those calls, as a synchronous one does, costs no atomic read-modify-write.
        /// Any other value takes a right of its own (one compare-and-swap) and gives it back (one
        /// more). The value closure is released by whoever leaves the gate `done` with no holder left:
        /// the thread that completes or cancels if nobody holds a right, else the last holder to leave.
        /// A delivery racing a cancel from another thread may still run, as in Combine, but never with
        /// a released closure.
        @usableFromInline let gate = Atomic<Int>(Gate.closed)
        /// The thread holding a delivery right for a whole call (see ``gate``), as ``currentThreadID()``;
        /// 0 when none does. Written only by that thread, so a thread that reads its own ID here is
        /// inside that call, and holds the delivery right through it (upstream's calls are serialized,
        /// so no other value is being delivered meanwhile).
        @usableFromInline let requester = Atomic<UInt>(0)
        /// Read only by the holder of the delivery right; released (set to `nil`) when the gate closes.
        /// Held in a box this sink owns by hand (retained once in `init`), so that the per-value call
        /// retains and releases nothing: a closure read from a `var` is retained for the call.
        #if SPOUT_CHECKED_EXCLUSIVITY
            @usableFromInline var valueHandler: Unmanaged<HandlerBox>?
        #else
            // Unchecked: bench/reactive.sh `generic-chain`, `subject-var` (every value).
            @usableFromInline @exclusivity(unchecked) var valueHandler: Unmanaged<HandlerBox>?
        #endif

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

        /// Runs `subscribe` (which subscribes this sink) holding a delivery right for the calling thread,
        /// so that the values a synchronous publisher delivers inside it take no right of their own.
        /// Called by ``Publisher/sink(receiveCompletion:receiveValue:)`` on a sink nobody else knows yet.
        @inlinable
        internal func whileHoldingDeliveryRight(_ subscribe: () -> Void) {
            gate.wrappingAdd(Gate.holder, ordering: .relaxed)
            requester.store(currentThreadID(), ordering: .relaxed)
            subscribe()
            requester.store(0, ordering: .relaxed)
            leaveGate()
        }

        public func receive(subscription: any Subscription) {
            let thread = currentThreadID()
            let spanning = requester.load(ordering: .relaxed) == thread
            let accepted = lock.withLock { () -> Bool in
                guard case .awaitingSubscription = state else { return false }
                state = .subscribed(subscription)
                // Open; unless this thread already holds a right for its whole `subscribe`, held by
                // this thread until its request returns.
                if !spanning { gate.wrappingAdd(Gate.holder, ordering: .relaxed) }
                gate.bitwiseAnd(~Gate.closed, ordering: .releasing)
                return true
            }
            guard accepted else { return subscription.cancel() }
            if spanning { return subscription.request(.unlimited) }
            // Another thread may be inside `whileHoldingDeliveryRight` (the subscription came here
            // asynchronously): then that thread owns `requester`, and values here take rights of their own.
            let claimed = requester.compareExchange(expected: 0, desired: thread, ordering: .relaxed).exchanged
            subscription.request(.unlimited)
            if claimed { requester.store(0, ordering: .relaxed) }
            leaveGate()
        }

        // The hot path: no lock. Inside a call during which this thread holds a delivery right (see
        // `gate`) no atomic read-modify-write either; elsewhere two uncontended compare-and-swaps. A
        // value that races with a cancel from another thread may still be delivered, as in Combine.
        @inlinable
        public func receive(_ value: Input) -> Subscribers.Demand {
            let requesting = requester.load(ordering: .relaxed)
            if requesting != 0, requesting == currentThreadID() {
                // Delivered from inside `subscribe` or our own request: this thread holds a delivery right.
                if gate.load(ordering: .relaxed) & Gate.closed == 0 {
                    valueHandler?._withUnsafeGuaranteedRef { $0.body(value) }
                }
                return .none
            }
            guard enterGate() else { return .none }
            valueHandler?._withUnsafeGuaranteedRef { $0.body(value) }
            leaveGate()
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
            let (subscription, completion) = lock.withLock {
                () -> ((any Subscription)?, ((Subscribers.Completion<Failure>) -> Void)?) in
                defer {
                    state = .terminal
                    completionHandler = nil
                }
                switch state {
                case .awaitingSubscription: return (nil, completionHandler)
                case .subscribed(let subscription): return (subscription, completionHandler)
                case .terminal: return (nil, nil)
                }
            }
            // Released here, outside the lock: a closure's captures may cancel this sink as they go.
            withExtendedLifetime(completion) {}
            closeGate()
            subscription?.cancel()
        }

        /// Takes a delivery right, unless the gate is closed.
        @inlinable
        internal func enterGate() -> Bool {
            var current = gate.load(ordering: .relaxed)
            while current & Gate.closed == 0 {
                let (exchanged, original) = gate.compareExchange(
                    expected: current,
                    desired: current &+ Gate.holder,
                    ordering: .acquiring
                )
                if exchanged { return true }
                current = original
            }
            return false
        }

        /// Gives a delivery right back; the last holder to leave a `done` gate releases the value closure
        /// (perhaps ended by the value closure itself).
        @inlinable
        internal func leaveGate() {
            // Wrapping: one locked instruction (the checked form is a compare-and-swap loop); a holder
            // count never goes below zero.
            if gate.wrappingSubtract(Gate.holder, ordering: .acquiringAndReleasing).newValue == Gate.closed | Gate.done
            {
                releaseValueHandler()
            }
        }

        /// Marks the gate `done` (closed for good); releases the value closure unless a delivery right is
        /// held, whose last holder then releases it. Only the first call does anything.
        private func closeGate() {
            let original = gate.bitwiseOr(Gate.closed | Gate.done, ordering: .acquiringAndReleasing).oldValue
            if original & Gate.done == 0, original < Gate.holder {
                releaseValueHandler()
            }
        }

        /// Only the thread that left the gate `done` with no holder calls this, so nobody reads
        /// ``valueHandler`` meanwhile or after.
        @usableFromInline
        internal func releaseValueHandler() {
            let handler = valueHandler
            valueHandler = nil
            handler?.release()
        }
    }
}

/// An ID of the calling thread, never 0.
@inlinable
internal func currentThreadID() -> UInt {
    #if canImport(Darwin)
        UInt(bitPattern: pthread_self())
    #else
        pthread_self()
    #endif
}
