extension Publisher {
    /// Publishes the first element of a stream, then finishes.
    ///
    /// On the first element it cancels upstream; the element waits for downstream demand. Requests
    /// unlimited elements from upstream. An empty stream finishes without publishing.
    ///
    ///     let cancellable = [1, 2, 3].publisher
    ///         .first()
    ///         .sink { print($0) }
    ///     // Prints: 1
    ///
    /// - Returns: A publisher that publishes the first element of the stream.
    public func first() -> Publishers.First<Self> {
        Publishers.First(upstream: self)
    }

    /// Publishes the first element of a stream to satisfy a predicate closure, then finishes.
    ///
    ///     let cancellable = [1, 2, 3].publisher
    ///         .first { $0 > 1 }
    ///         .sink { print($0) }
    ///     // Prints: 2
    ///
    /// - Parameter predicate: A closure that takes an element and returns whether it is a match.
    /// - Returns: A publisher that publishes the first element that satisfies the predicate.
    public func first(where predicate: @escaping (Output) -> Bool) -> Publishers.FirstWhere<Self> {
        Publishers.FirstWhere(upstream: self, predicate: predicate)
    }

    /// Like ``first(where:)``, with a predicate that can throw; a thrown error fails the stream and
    /// cancels upstream.
    ///
    ///     let cancellable = [1, 2, 3].publisher
    ///         .tryFirst { $0 > 1 }
    ///         .sink(receiveCompletion: { print($0) }, receiveValue: { print($0) })
    ///     // Prints: 2 finished (one per line)
    ///
    /// - Parameter predicate: A closure that returns whether an element is a match, or throws.
    /// - Returns: A publisher that publishes the first element that satisfies the predicate.
    public func tryFirst(where predicate: @escaping (Output) throws -> Bool) -> Publishers.TryFirstWhere<Self> {
        Publishers.TryFirstWhere(upstream: self, predicate: predicate)
    }
}

extension Publishers {
    /// A publisher that publishes the first element of a stream, then finishes.
    ///
    /// **Ownership:** a value; its subscription holds the element until it delivers.
    ///
    /// **Thread safety:** value type; safe to subscribe from any thread.
    public struct First<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// Creates a publisher that publishes the first element of `upstream`.
        public init(upstream: Upstream) {
            self.upstream = upstream
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let reduction = SearchReduction<Output, Output, Failure, Failure>.first(
                "First",
                PredicateTest { _ in true }
            )
            upstream.subscribe(ReducerInner(reduction: reduction, downstream: subscriber))
        }
    }

    /// A publisher that publishes the first element of a stream to satisfy a predicate, then finishes.
    ///
    /// **Ownership:** a value; its subscription retains the predicate until the stream ends.
    ///
    /// **Thread safety:** value type; the predicate runs on whatever thread upstream delivers on.
    public struct FirstWhere<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// The closure that determines whether to publish an element.
        public let predicate: (Upstream.Output) -> Bool

        /// Creates a publisher that publishes the first element of `upstream` satisfying `predicate`.
        public init(upstream: Upstream, predicate: @escaping (Upstream.Output) -> Bool) {
            self.upstream = upstream
            self.predicate = predicate
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let reduction = SearchReduction<Output, Output, Failure, Failure>.first(
                "FirstWhere",
                PredicateTest(predicate)
            )
            upstream.subscribe(ReducerInner(reduction: reduction, downstream: subscriber))
        }
    }

    /// A publisher that publishes the first element of a stream to satisfy a throwing predicate,
    /// then finishes.
    ///
    /// **Ownership:** a value; its subscription retains the predicate until the stream ends.
    ///
    /// **Thread safety:** value type; the predicate runs on whatever thread upstream delivers on.
    public struct TryFirstWhere<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = any Error

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// The closure that determines whether to publish an element, or throws.
        public let predicate: (Upstream.Output) throws -> Bool

        /// Creates a publisher that publishes the first element of `upstream` satisfying `predicate`.
        public init(upstream: Upstream, predicate: @escaping (Upstream.Output) throws -> Bool) {
            self.upstream = upstream
            self.predicate = predicate
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let test = PredicateTest<Output, Upstream.Failure, any Error>(throwing: predicate)
            let reduction = SearchReduction.first("TryFirstWhere", test)
            upstream.subscribe(ReducerInner(reduction: reduction, downstream: subscriber))
        }
    }
}
