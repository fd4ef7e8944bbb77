extension Publisher {
    /// Publishes the number of elements received from the upstream publisher when it finishes.
    ///
    /// Requests unlimited elements from upstream; the count waits for downstream demand.
    ///
    ///     let cancellable = ["a", "b", "c"].publisher
    ///         .count()
    ///         .sink { print($0) }
    ///     // Prints: 3
    ///
    /// - Returns: A publisher that publishes the number of elements received.
    public func count() -> Publishers.Count<Self> {
        Publishers.Count(upstream: self)
    }
}

extension Publishers {
    /// A publisher that publishes the number of elements received from upstream when it finishes.
    ///
    /// **Ownership:** a value; its subscription holds the running count until it delivers.
    ///
    /// **Thread safety:** value type; safe to subscribe from any thread.
    public struct Count<Upstream: Publisher>: Publisher {
        public typealias Output = Int
        public typealias Failure = Upstream.Failure

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// Creates a publisher that counts the elements of `upstream`.
        public init(upstream: Upstream) {
            self.upstream = upstream
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.subscribe(
                ReducerInner(reduction: CountReduction<Upstream.Output, Failure>(), downstream: subscriber)
            )
        }
    }
}

/// The reduction of `count()`.
private struct CountReduction<Input, Failure: Error>: Reduction {
    typealias UpstreamFailure = Failure

    var name: String { "Count" }

    var count = 0

    mutating func reduce(_ input: Input) -> ReductionStep<Int, Failure> {
        count &+= 1
        return .continue
    }

    mutating func resultOnFinish() -> Int? { count }
}
