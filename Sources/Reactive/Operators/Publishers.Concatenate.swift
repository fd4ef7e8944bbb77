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
    /// What a concatenation does when an upstream completes: the prefix's finish subscribes the
    /// suffix, which gets the demand downstream has not used up; any other completion goes downstream.
    /// The rest is ``SequentialSubscription``'s, which is what downstream sees.
    ///
    /// **Ownership:** retained by its upstreams' sources; holds the suffix.
    ///
    /// **Thread safety:** its completions arrive from upstream; the machine is the subscription's,
    /// under its lock.
    private final class Inner<Downstream: Subscriber> where Downstream.Input == Output, Downstream.Failure == Failure {
        private let subscription: SequentialSubscription<Downstream>
        private let suffix: Suffix

        init(downstream: Downstream, suffix: Suffix) {
            subscription = SequentialSubscription(downstream: downstream, name: "Concatenate")
            self.suffix = suffix
        }

        func start(_ prefix: Prefix) {
            prefix.subscribe(source(generation: 0))
        }

        private func source(generation: Int) -> SequentialSource<Output, Failure> {
            subscription.source(generation: generation) { [self] in received(completion: $0, generation: $1) }
        }

        private func received(completion: Subscribers.Completion<Failure>, generation: Int) {
            if case .finished = completion, generation == 0 {
                guard let next = subscription.withMachine({ $0.switchToNext(after: generation) }) else { return }
                suffix.subscribe(source(generation: next))
                return
            }
            subscription.withMachine { $0.completed(generation: generation) }?.receive(completion: completion)
        }
    }
}
