extension Publisher {
    /// Publishes a single Boolean value that indicates whether all received elements pass a
    /// given predicate.
    ///
    /// At the first element that fails, it cancels upstream and publishes `false`; if upstream
    /// finishes first it publishes `true`. Requests unlimited elements from upstream.
    ///
    ///     let cancellable = [2, 4, 6].publisher
    ///         .allSatisfy { $0.isMultiple(of: 2) }
    ///         .sink { print($0) }
    ///     // Prints: true
    ///
    /// - Parameter predicate: A closure that evaluates each received element.
    /// - Returns: A publisher that publishes whether all elements satisfy the predicate.
    public func allSatisfy(_ predicate: @escaping (Output) -> Bool) -> Publishers.AllSatisfy<Self> {
        Publishers.AllSatisfy(upstream: self, predicate: predicate)
    }

    /// Like ``allSatisfy(_:)``, with a predicate that can throw; a thrown error fails the stream
    /// and cancels upstream.
    ///
    ///     let cancellable = [2, 3].publisher
    ///         .tryAllSatisfy { $0 > 1 }
    ///         .sink(receiveCompletion: { print($0) }, receiveValue: { print($0) })
    ///     // Prints: true finished (one per line)
    ///
    /// - Parameter predicate: A closure that evaluates each received element, or throws.
    /// - Returns: A publisher that publishes whether all elements satisfy the predicate.
    public func tryAllSatisfy(_ predicate: @escaping (Output) throws -> Bool) -> Publishers.TryAllSatisfy<Self> {
        Publishers.TryAllSatisfy(upstream: self, predicate: predicate)
    }
}

extension Publishers {
    /// A publisher that publishes whether all received elements pass a predicate.
    ///
    /// **Ownership:** a value; its subscription retains the predicate until the stream ends.
    ///
    /// **Thread safety:** value type; the predicate runs on whatever thread upstream delivers on.
    public struct AllSatisfy<Upstream: Publisher>: Publisher {
        public typealias Output = Bool
        public typealias Failure = Upstream.Failure

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// A closure that evaluates each received element.
        public let predicate: (Upstream.Output) -> Bool

        /// Creates a publisher that checks every element of `upstream` against `predicate`.
        public init(upstream: Upstream, predicate: @escaping (Upstream.Output) -> Bool) {
            self.upstream = upstream
            self.predicate = predicate
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let reduction = SearchReduction<Upstream.Output, Bool, Failure, Failure>.allSatisfy(
                "AllSatisfy",
                PredicateTest(predicate)
            )
            upstream.subscribe(ReducerInner(reduction: reduction, downstream: subscriber))
        }
    }

    /// A publisher that publishes whether all received elements pass a predicate that can throw.
    ///
    /// **Ownership:** a value; its subscription retains the predicate until the stream ends.
    ///
    /// **Thread safety:** value type; the predicate runs on whatever thread upstream delivers on.
    public struct TryAllSatisfy<Upstream: Publisher>: Publisher {
        public typealias Output = Bool
        public typealias Failure = any Error

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// A closure that evaluates each received element, or throws.
        public let predicate: (Upstream.Output) throws -> Bool

        /// Creates a publisher that checks every element of `upstream` against `predicate`.
        public init(upstream: Upstream, predicate: @escaping (Upstream.Output) throws -> Bool) {
            self.upstream = upstream
            self.predicate = predicate
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let test = PredicateTest<Upstream.Output, Upstream.Failure, any Error>(throwing: predicate)
            let reduction = SearchReduction.allSatisfy("TryAllSatisfy", test)
            upstream.subscribe(ReducerInner(reduction: reduction, downstream: subscriber))
        }
    }
}
