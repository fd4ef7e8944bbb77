extension Publisher {
    /// Publishes the last element of a stream, after the stream finishes.
    ///
    /// Requests unlimited elements from upstream; the element waits for downstream demand. An empty
    /// stream finishes without publishing.
    ///
    ///     let cancellable = [1, 2, 3].publisher
    ///         .last()
    ///         .sink { print($0) }
    ///     // Prints: 3
    ///
    /// - Returns: A publisher that publishes the last element of the stream.
    public func last() -> Publishers.Last<Self> {
        Publishers.Last(upstream: self)
    }

    /// Publishes the last element of a stream that satisfies a predicate, after the stream finishes.
    ///
    ///     let cancellable = [1, 2, 3].publisher
    ///         .last { $0 < 3 }
    ///         .sink { print($0) }
    ///     // Prints: 2
    ///
    /// - Parameter predicate: A closure that takes an element and returns whether it is a match.
    /// - Returns: A publisher that publishes the last element that satisfies the predicate.
    public func last(where predicate: @escaping (Output) -> Bool) -> Publishers.LastWhere<Self> {
        Publishers.LastWhere(upstream: self, predicate: predicate)
    }

    /// Like ``last(where:)``, with a predicate that can throw; a thrown error fails the stream and
    /// cancels upstream.
    ///
    ///     let cancellable = [1, 2, 3].publisher
    ///         .tryLast { $0 < 3 }
    ///         .sink(receiveCompletion: { print($0) }, receiveValue: { print($0) })
    ///     // Prints: 2 finished (one per line)
    ///
    /// - Parameter predicate: A closure that returns whether an element is a match, or throws.
    /// - Returns: A publisher that publishes the last element that satisfies the predicate.
    public func tryLast(where predicate: @escaping (Output) throws -> Bool) -> Publishers.TryLastWhere<Self> {
        Publishers.TryLastWhere(upstream: self, predicate: predicate)
    }
}

extension Publishers {
    /// A publisher that publishes the last element of a stream, after the stream finishes.
    ///
    /// **Ownership:** a value; its subscription holds the latest element until it delivers.
    ///
    /// **Thread safety:** value type; safe to subscribe from any thread.
    public struct Last<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// Creates a publisher that publishes the last element of `upstream`.
        public init(upstream: Upstream) {
            self.upstream = upstream
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let reduction = SearchReduction<Output, Output, Failure, Failure>.last("Last", PredicateTest { _ in true })
            upstream.subscribe(ReducerInner(reduction: reduction, downstream: subscriber))
        }
    }

    /// A publisher that publishes the last element of a stream that satisfies a predicate, after the
    /// stream finishes.
    ///
    /// **Ownership:** a value; its subscription retains the predicate until the stream ends.
    ///
    /// **Thread safety:** value type; the predicate runs on whatever thread upstream delivers on.
    public struct LastWhere<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// The closure that determines whether to publish an element.
        public let predicate: (Upstream.Output) -> Bool

        /// Creates a publisher that publishes the last element of `upstream` satisfying `predicate`.
        public init(upstream: Upstream, predicate: @escaping (Upstream.Output) -> Bool) {
            self.upstream = upstream
            self.predicate = predicate
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let reduction = SearchReduction<Output, Output, Failure, Failure>.last(
                "LastWhere",
                PredicateTest(predicate)
            )
            upstream.subscribe(ReducerInner(reduction: reduction, downstream: subscriber))
        }
    }

    /// A publisher that publishes the last element of a stream that satisfies a throwing predicate,
    /// after the stream finishes.
    ///
    /// **Ownership:** a value; its subscription retains the predicate until the stream ends.
    ///
    /// **Thread safety:** value type; the predicate runs on whatever thread upstream delivers on.
    public struct TryLastWhere<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = any Error

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// The closure that determines whether to publish an element, or throws.
        public let predicate: (Upstream.Output) throws -> Bool

        /// Creates a publisher that publishes the last element of `upstream` satisfying `predicate`.
        public init(upstream: Upstream, predicate: @escaping (Upstream.Output) throws -> Bool) {
            self.upstream = upstream
            self.predicate = predicate
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let test = PredicateTest<Output, Upstream.Failure, any Error>(throwing: predicate)
            let reduction = SearchReduction.last("TryLastWhere", test)
            upstream.subscribe(ReducerInner(reduction: reduction, downstream: subscriber))
        }
    }
}
