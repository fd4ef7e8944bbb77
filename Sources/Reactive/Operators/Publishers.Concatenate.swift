extension Publisher {
    /// Appends a publisher's output with the specified elements.
    ///
    ///     let cancellable = [1, 2].publisher
    ///         .append(3, 4)
    ///         .sink { print($0) }
    ///     // Prints: 1 2 3 4 (one per line)
    ///
    /// - Parameter elements: Elements to publish after this publisher's elements.
    /// - Returns: A publisher that appends the specified elements after this publisher's elements.
    public func append(_ elements: Output...) -> Publishers.Concatenate<Self, Publishers.Sequence<[Output], Failure>> {
        append(Publishers.Sequence(sequence: elements))
    }

    /// Appends a publisher's output with the elements of a sequence.
    ///
    ///     let cancellable = [1, 2].publisher
    ///         .append([3, 4])
    ///         .sink { print($0) }
    ///     // Prints: 1 2 3 4 (one per line)
    ///
    /// - Parameter elements: A sequence of elements to publish after this publisher's elements.
    /// - Returns: A publisher that appends the sequence's elements after this publisher's elements.
    public func append<S: Sequence>(
        _ elements: S
    ) -> Publishers.Concatenate<Self, Publishers.Sequence<S, Failure>> where Output == S.Element {
        append(Publishers.Sequence(sequence: elements))
    }

    /// Appends the output of a publisher to this publisher's output.
    ///
    /// The second publisher is subscribed when this one finishes, with the demand downstream has
    /// not used up; if this one fails, the second is never subscribed.
    ///
    ///     let cancellable = [1, 2].publisher
    ///         .append(Just(3))
    ///         .sink { print($0) }
    ///     // Prints: 1 2 3 (one per line)
    ///
    /// - Parameter publisher: The publisher to republish after this one finishes.
    /// - Returns: A publisher that republishes this publisher's elements, then the other's.
    public func append<P: Publisher>(
        _ publisher: P
    ) -> Publishers.Concatenate<Self, P> where Failure == P.Failure, Output == P.Output {
        Publishers.Concatenate(prefix: self, suffix: publisher)
    }

    /// Prefixes a publisher's output with the specified elements.
    ///
    ///     let cancellable = [3, 4].publisher
    ///         .prepend(1, 2)
    ///         .sink { print($0) }
    ///     // Prints: 1 2 3 4 (one per line)
    ///
    /// - Parameter elements: Elements to publish before this publisher's elements.
    /// - Returns: A publisher that prefixes the specified elements before this publisher's elements.
    public func prepend(_ elements: Output...) -> Publishers.Concatenate<Publishers.Sequence<[Output], Failure>, Self> {
        prepend(Publishers.Sequence(sequence: elements))
    }

    /// Prefixes a publisher's output with the elements of a sequence.
    ///
    ///     let cancellable = [3, 4].publisher
    ///         .prepend([1, 2])
    ///         .sink { print($0) }
    ///     // Prints: 1 2 3 4 (one per line)
    ///
    /// - Parameter elements: A sequence of elements to publish before this publisher's elements.
    /// - Returns: A publisher that prefixes the sequence's elements before this publisher's elements.
    public func prepend<S: Sequence>(
        _ elements: S
    ) -> Publishers.Concatenate<Publishers.Sequence<S, Failure>, Self> where Output == S.Element {
        prepend(Publishers.Sequence(sequence: elements))
    }

    /// Prefixes this publisher's output with the output of another publisher.
    ///
    /// This publisher is subscribed only when the other finishes.
    ///
    ///     let cancellable = [2, 3].publisher
    ///         .prepend(Just(1))
    ///         .sink { print($0) }
    ///     // Prints: 1 2 3 (one per line)
    ///
    /// - Parameter publisher: The publisher to republish before this one.
    /// - Returns: A publisher that republishes the other publisher's elements, then this one's.
    public func prepend<P: Publisher>(
        _ publisher: P
    ) -> Publishers.Concatenate<P, Self> where Failure == P.Failure, Output == P.Output {
        Publishers.Concatenate(prefix: publisher, suffix: self)
    }
}

extension Publishers {
    /// A publisher that emits all of one publisher's elements before those from another publisher.
    ///
    /// **Ownership:** a value; its subscription retains the suffix until it is subscribed.
    ///
    /// **Thread safety:** value type; safe to subscribe from any thread.
    public struct Concatenate<Prefix: Publisher, Suffix: Publisher>: Publisher
    where Prefix.Failure == Suffix.Failure, Prefix.Output == Suffix.Output {
        public typealias Output = Suffix.Output
        public typealias Failure = Suffix.Failure

        /// The publisher to republish, in its entirety, before republishing elements from `suffix`.
        public let prefix: Prefix

        /// The publisher to republish only after `prefix` finishes.
        public let suffix: Suffix

        /// Creates a publisher that republishes `prefix`, then `suffix`.
        public init(prefix: Prefix, suffix: Suffix) {
            self.prefix = prefix
            self.suffix = suffix
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            Inner(downstream: subscriber, suffix: suffix).start(prefix)
        }
    }
}

extension Publishers.Concatenate {
    /// The subscription of a concatenation: reads the prefix, then the suffix, with the demand
    /// downstream has not used up.
    ///
    /// **Ownership:** retained by the current upstream and by downstream; releases both on
    /// completion or cancel.
    ///
    /// **Thread safety:** `request` and `cancel` are safe from any thread.
    private final class Inner<Downstream: Subscriber>: Subscription, CustomStringConvertible,
        CustomPlaygroundDisplayConvertible
    where Downstream.Input == Output, Downstream.Failure == Failure {
        private let lock = Lock()
        private var machine: SequentialStateMachine<Downstream>  // Guarded by lock.
        private let suffix: Suffix

        init(downstream: Downstream, suffix: Suffix) {
            machine = SequentialStateMachine(downstream: downstream)
            self.suffix = suffix
        }

        var description: String { "Concatenate" }

        var playgroundDescription: Any { description }

        func start(_ prefix: Prefix) {
            prefix.subscribe(source(generation: 0))
        }

        func request(_ demand: Subscribers.Demand) {
            if demand == .none { apiViolation("demand must not be zero") }
            lock.withLock { machine.demandRequested(demand) }?.request(demand)
        }

        func cancel() {
            lock.withLock { machine.cancelled() }?.cancel()
        }

        private func source(generation: Int) -> SequentialSource<Output, Failure> {
            SequentialSource(
                name: "Concatenate",
                generation: generation,
                onSubscription: { [self] in received(subscription: $0, generation: $1) },
                onValue: { [self] in received($0, generation: $1) },
                onCompletion: { [self] in received(completion: $0, generation: $1) }
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

        private func received(_ input: Output, generation: Int) -> Subscribers.Demand {
            guard let downstream = lock.withLock({ machine.valueReceived(generation: generation) }) else {
                return .none
            }
            let more = downstream.receive(input)
            if more > 0 { lock.withLock { machine.demandReturned(more, generation: generation) } }
            return more
        }

        private func received(completion: Subscribers.Completion<Failure>, generation: Int) {
            if case .finished = completion, generation == 0 {
                guard let next = lock.withLock({ machine.switchToNext(after: generation) }) else { return }
                suffix.subscribe(source(generation: next))
                return
            }
            lock.withLock { machine.completed(generation: generation) }?.receive(completion: completion)
        }
    }
}
