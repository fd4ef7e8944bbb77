extension Publisher where Output: Comparable {
    /// Publishes the minimum value received from the upstream publisher, after it finishes.
    ///
    /// Requests unlimited elements from upstream; of several equal minimums, the first is published.
    ///
    ///     let cancellable = [3, 1, 2].publisher
    ///         .min()
    ///         .sink { print($0) }
    ///     // Prints: 1
    ///
    /// - Returns: A publisher that publishes the minimum value received, if any.
    public func min() -> Publishers.Comparison<Self> {
        min(by: <)
    }

    /// Publishes the maximum value received from the upstream publisher, after it finishes.
    ///
    /// Requests unlimited elements from upstream; of several equal maximums, the first is published.
    ///
    ///     let cancellable = [3, 1, 2].publisher
    ///         .max()
    ///         .sink { print($0) }
    ///     // Prints: 3
    ///
    /// - Returns: A publisher that publishes the maximum value received, if any.
    public func max() -> Publishers.Comparison<Self> {
        max(by: <)
    }
}

extension Publisher {
    /// Publishes the minimum value received, ordered by the given closure, after upstream finishes.
    ///
    ///     let cancellable = ["bb", "a", "ccc"].publisher
    ///         .min { $0.count < $1.count }
    ///         .sink { print($0) }
    ///     // Prints: a
    ///
    /// - Parameter areInIncreasingOrder: Whether its first argument is ordered before its second.
    /// - Returns: A publisher that publishes the minimum value received, if any.
    public func min(by areInIncreasingOrder: @escaping (Output, Output) -> Bool) -> Publishers.Comparison<Self> {
        Publishers.Comparison(upstream: self) { areInIncreasingOrder($1, $0) }
    }

    /// Publishes the minimum value received, ordered by a closure that can throw; a thrown error
    /// fails the stream and cancels upstream.
    ///
    ///     let cancellable = [3, 1, 2].publisher
    ///         .tryMin { $0 < $1 }
    ///         .sink(receiveCompletion: { print($0) }, receiveValue: { print($0) })
    ///     // Prints: 1 finished (one per line)
    ///
    /// - Parameter areInIncreasingOrder: Whether its first argument is ordered before its second, or throws.
    /// - Returns: A publisher that publishes the minimum value received, if any.
    public func tryMin(
        by areInIncreasingOrder: @escaping (Output, Output) throws -> Bool
    ) -> Publishers.TryComparison<Self> {
        Publishers.TryComparison(upstream: self) { try areInIncreasingOrder($1, $0) }
    }

    /// Publishes the maximum value received, ordered by the given closure, after upstream finishes.
    ///
    ///     let cancellable = ["bb", "a", "ccc"].publisher
    ///         .max { $0.count < $1.count }
    ///         .sink { print($0) }
    ///     // Prints: ccc
    ///
    /// - Parameter areInIncreasingOrder: Whether its first argument is ordered before its second.
    /// - Returns: A publisher that publishes the maximum value received, if any.
    public func max(by areInIncreasingOrder: @escaping (Output, Output) -> Bool) -> Publishers.Comparison<Self> {
        Publishers.Comparison(upstream: self, areInIncreasingOrder: areInIncreasingOrder)
    }

    /// Publishes the maximum value received, ordered by a closure that can throw; a thrown error
    /// fails the stream and cancels upstream.
    ///
    ///     let cancellable = [3, 1, 2].publisher
    ///         .tryMax { $0 < $1 }
    ///         .sink(receiveCompletion: { print($0) }, receiveValue: { print($0) })
    ///     // Prints: 3 finished (one per line)
    ///
    /// - Parameter areInIncreasingOrder: Whether its first argument is ordered before its second, or throws.
    /// - Returns: A publisher that publishes the maximum value received, if any.
    public func tryMax(
        by areInIncreasingOrder: @escaping (Output, Output) throws -> Bool
    ) -> Publishers.TryComparison<Self> {
        Publishers.TryComparison(upstream: self, areInIncreasingOrder: areInIncreasingOrder)
    }
}

extension Publishers {
    /// A publisher that republishes the greatest element of upstream, by a given ordering, when it
    /// finishes; `min` passes the reversed ordering.
    ///
    /// The kept element is replaced only when `areInIncreasingOrder(kept, new)` holds, so the first of
    /// several equal elements wins.
    ///
    /// **Ownership:** a value; its subscription holds the current element until it delivers.
    ///
    /// **Thread safety:** value type; the closure runs on whatever thread upstream delivers on.
    public struct Comparison<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// A closure that receives two elements and returns `true` if they are in increasing order.
        public let areInIncreasingOrder: (Upstream.Output, Upstream.Output) -> Bool

        /// Creates a publisher that publishes the greatest element of `upstream` by `areInIncreasingOrder`.
        public init(
            upstream: Upstream,
            areInIncreasingOrder: @escaping (Upstream.Output, Upstream.Output) -> Bool
        ) {
            self.upstream = upstream
            self.areInIncreasingOrder = areInIncreasingOrder
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let ordered = areInIncreasingOrder
            let reduction = ComparisonReduction<Output, Failure, Failure>(name: "Comparison") {
                .success(ordered($0, $1))
            }
            upstream.subscribe(ReducerInner(reduction: reduction, downstream: subscriber))
        }
    }

    /// A publisher that republishes the greatest element of upstream, by an ordering that can throw,
    /// when it finishes.
    ///
    /// **Ownership:** a value; its subscription holds the current element until it delivers.
    ///
    /// **Thread safety:** value type; the closure runs on whatever thread upstream delivers on.
    public struct TryComparison<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = any Error

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// A closure that returns `true` if two elements are in increasing order, or throws.
        public let areInIncreasingOrder: (Upstream.Output, Upstream.Output) throws -> Bool

        /// Creates a publisher that publishes the greatest element of `upstream` by `areInIncreasingOrder`.
        public init(
            upstream: Upstream,
            areInIncreasingOrder: @escaping (Upstream.Output, Upstream.Output) throws -> Bool
        ) {
            self.upstream = upstream
            self.areInIncreasingOrder = areInIncreasingOrder
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let ordered = areInIncreasingOrder
            let reduction = ComparisonReduction<Output, Upstream.Failure, any Error>(name: "TryComparison") {
                kept,
                new in Result { try ordered(kept, new) }
            }
            upstream.subscribe(ReducerInner(reduction: reduction, downstream: subscriber))
        }
    }
}

/// The reduction of `min` and `max`: keep the greatest element by the ordering.
private struct ComparisonReduction<Input, UpstreamFailure: Error, Failure: Error>: Reduction {
    let name: String
    let ordered: (Input, Input) -> Result<Bool, Failure>
    let convert: (UpstreamFailure) -> Failure
    var kept: Input?

    init(name: String, ordered: @escaping (Input, Input) -> Result<Bool, Failure>) where UpstreamFailure == Failure {
        self.name = name
        self.ordered = ordered
        convert = { $0 }
    }

    init(name: String, ordered: @escaping (Input, Input) -> Result<Bool, Failure>) where Failure == any Error {
        self.name = name
        self.ordered = ordered
        convert = { $0 }
    }

    mutating func reduce(_ input: Input) -> ReductionStep<Input, Failure> {
        guard let current = kept else {
            kept = input
            return .continue
        }
        switch ordered(current, input) {
        case .success(true):
            kept = input
            return .continue
        case .success(false):
            return .continue
        case .failure(let error):
            return .fail(error)
        }
    }

    mutating func resultOnFinish() -> Input? { kept.take() }

    func failure(from error: UpstreamFailure) -> Failure { convert(error) }
}
