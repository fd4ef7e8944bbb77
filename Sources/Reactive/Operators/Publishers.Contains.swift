extension Publisher where Output: Equatable {
    /// Publishes a Boolean value upon receiving an element equal to the argument.
    ///
    /// On a match it cancels upstream and publishes `true`; if upstream finishes first it publishes
    /// `false`. Requests unlimited elements from upstream.
    ///
    ///     let cancellable = [1, 2, 3].publisher
    ///         .contains(2)
    ///         .sink { print($0) }
    ///     // Prints: true
    ///
    /// - Parameter output: An element to match against.
    /// - Returns: A publisher that emits `true` when upstream publishes a matching element.
    public func contains(_ output: Output) -> Publishers.Contains<Self> {
        Publishers.Contains(upstream: self, output: output)
    }
}

extension Publisher {
    /// Publishes a Boolean value upon receiving an element that satisfies the predicate closure.
    ///
    ///     let cancellable = [1, 2, 3].publisher
    ///         .contains { $0 > 2 }
    ///         .sink { print($0) }
    ///     // Prints: true
    ///
    /// - Parameter predicate: A closure that takes an element and returns whether it is a match.
    /// - Returns: A publisher that emits `true` when upstream publishes a matching element.
    public func contains(where predicate: @escaping (Output) -> Bool) -> Publishers.ContainsWhere<Self> {
        Publishers.ContainsWhere(upstream: self, predicate: predicate)
    }

    /// Like ``contains(where:)``, with a predicate that can throw; a thrown error fails the stream
    /// and cancels upstream.
    ///
    ///     let cancellable = [1, 2, 3].publisher
    ///         .tryContains { $0 > 5 }
    ///         .sink(receiveCompletion: { print($0) }, receiveValue: { print($0) })
    ///     // Prints: false finished (one per line)
    ///
    /// - Parameter predicate: A closure that returns whether an element is a match, or throws.
    /// - Returns: A publisher that emits `true` on a match, or fails with the thrown error.
    public func tryContains(
        where predicate: @escaping (Output) throws -> Bool
    ) -> Publishers.TryContainsWhere<Self> {
        Publishers.TryContainsWhere(upstream: self, predicate: predicate)
    }
}

extension Publishers {
    /// A publisher that emits a Boolean value when it receives a specific element from upstream.
    ///
    /// **Ownership:** a value; its subscription retains the element until the stream ends.
    ///
    /// **Thread safety:** value type; safe to subscribe from any thread.
    public struct Contains<Upstream: Publisher>: Publisher where Upstream.Output: Equatable {
        public typealias Output = Bool
        public typealias Failure = Upstream.Failure

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// The element to scan for in the upstream publisher.
        public let output: Upstream.Output

        /// Creates a publisher that looks for `output` among the elements of `upstream`.
        public init(upstream: Upstream, output: Upstream.Output) {
            self.upstream = upstream
            self.output = output
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let output = output
            let reduction = SearchReduction<Upstream.Output, Bool, Failure, Failure>.contains(
                "Contains",
                PredicateTest { $0 == output }
            )
            upstream.subscribe(ReducerInner(reduction: reduction, downstream: subscriber))
        }
    }

    /// A publisher that emits a Boolean value upon receiving an element that satisfies a predicate.
    ///
    /// **Ownership:** a value; its subscription retains the predicate until the stream ends.
    ///
    /// **Thread safety:** value type; the predicate runs on whatever thread upstream delivers on.
    public struct ContainsWhere<Upstream: Publisher>: Publisher {
        public typealias Output = Bool
        public typealias Failure = Upstream.Failure

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// The closure that determines whether an element is a match.
        public let predicate: (Upstream.Output) -> Bool

        /// Creates a publisher that looks among the elements of `upstream` for one satisfying `predicate`.
        public init(upstream: Upstream, predicate: @escaping (Upstream.Output) -> Bool) {
            self.upstream = upstream
            self.predicate = predicate
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let reduction = SearchReduction<Upstream.Output, Bool, Failure, Failure>.contains(
                "ContainsWhere",
                PredicateTest(predicate)
            )
            upstream.subscribe(ReducerInner(reduction: reduction, downstream: subscriber))
        }
    }

    /// A publisher that emits a Boolean value upon receiving an element that satisfies a throwing
    /// predicate.
    ///
    /// **Ownership:** a value; its subscription retains the predicate until the stream ends.
    ///
    /// **Thread safety:** value type; the predicate runs on whatever thread upstream delivers on.
    public struct TryContainsWhere<Upstream: Publisher>: Publisher {
        public typealias Output = Bool
        public typealias Failure = any Error

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// The closure that determines whether an element is a match, or throws.
        public let predicate: (Upstream.Output) throws -> Bool

        /// Creates a publisher that looks among the elements of `upstream` for one satisfying `predicate`.
        public init(upstream: Upstream, predicate: @escaping (Upstream.Output) throws -> Bool) {
            self.upstream = upstream
            self.predicate = predicate
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let test = PredicateTest<Upstream.Output, Upstream.Failure, any Error>(throwing: predicate)
            let reduction = SearchReduction.contains("TryContainsWhere", test)
            upstream.subscribe(ReducerInner(reduction: reduction, downstream: subscriber))
        }
    }
}
