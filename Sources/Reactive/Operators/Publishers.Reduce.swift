extension Publisher {
    /// Applies a closure that collects each element of a stream and publishes a final result
    /// when upstream finishes.
    ///
    /// Requests unlimited elements from upstream; the result waits for downstream demand.
    ///
    ///     let cancellable = [1, 2, 3, 4].publisher
    ///         .reduce(0, +)
    ///         .sink { print($0) }
    ///     // Prints: 10
    ///
    /// - Parameters:
    ///   - initialResult: The value the closure receives the first time it is called.
    ///   - nextPartialResult: A closure that produces a new value from the accumulated one and the
    ///     next element.
    /// - Returns: A publisher that publishes the final result.
    public func reduce<T>(
        _ initialResult: T,
        _ nextPartialResult: @escaping (T, Output) -> T
    ) -> Publishers.Reduce<Self, T> {
        Publishers.Reduce(upstream: self, initial: initialResult, nextPartialResult: nextPartialResult)
    }

    /// Like ``reduce(_:_:)``, with a closure that can throw; a thrown error fails the stream and
    /// cancels upstream.
    ///
    ///     let cancellable = [1, 2, 3].publisher
    ///         .tryReduce(0) { $0 + $1 }
    ///         .sink(receiveCompletion: { print($0) }, receiveValue: { print($0) })
    ///     // Prints: 6 finished (one per line)
    ///
    /// - Parameters:
    ///   - initialResult: The value the closure receives the first time it is called.
    ///   - nextPartialResult: A closure that produces a new value, or throws.
    /// - Returns: A publisher that publishes the final result or fails with the thrown error.
    public func tryReduce<T>(
        _ initialResult: T,
        _ nextPartialResult: @escaping (T, Output) throws -> T
    ) -> Publishers.TryReduce<Self, T> {
        Publishers.TryReduce(upstream: self, initial: initialResult, nextPartialResult: nextPartialResult)
    }
}

extension Publishers {
    /// A publisher that applies a closure to all received elements and publishes the final result
    /// when upstream finishes.
    ///
    /// **Ownership:** a value; its subscription retains the closure and the running result until the
    /// stream ends.
    ///
    /// **Thread safety:** value type; the closure runs on whatever thread upstream delivers on.
    public struct Reduce<Upstream: Publisher, Output>: Publisher {
        public typealias Failure = Upstream.Failure

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// The value the closure receives the first time it is called.
        public let initial: Output

        /// A closure that produces a new value from the accumulated one and the next element.
        public let nextPartialResult: (Output, Upstream.Output) -> Output

        /// Creates a publisher that reduces the elements of `upstream` with `nextPartialResult`.
        public init(
            upstream: Upstream,
            initial: Output,
            nextPartialResult: @escaping (Output, Upstream.Output) -> Output
        ) {
            self.upstream = upstream
            self.initial = initial
            self.nextPartialResult = nextPartialResult
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let next = nextPartialResult
            let reduction = ReduceReduction<Upstream.Output, Output, Failure, Failure>(result: initial) {
                .success(next($0, $1))
            }
            upstream.subscribe(ReducerInner(reduction: reduction, downstream: subscriber))
        }
    }

    /// A publisher that applies a closure that can throw to all received elements and publishes the
    /// final result when upstream finishes.
    ///
    /// **Ownership:** a value; its subscription retains the closure and the running result until the
    /// stream ends.
    ///
    /// **Thread safety:** value type; the closure runs on whatever thread upstream delivers on.
    public struct TryReduce<Upstream: Publisher, Output>: Publisher {
        public typealias Failure = any Error

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// The value the closure receives the first time it is called.
        public let initial: Output

        /// A closure that produces a new value from the accumulated one and the next element, or throws.
        public let nextPartialResult: (Output, Upstream.Output) throws -> Output

        /// Creates a publisher that reduces the elements of `upstream` with `nextPartialResult`.
        public init(
            upstream: Upstream,
            initial: Output,
            nextPartialResult: @escaping (Output, Upstream.Output) throws -> Output
        ) {
            self.upstream = upstream
            self.initial = initial
            self.nextPartialResult = nextPartialResult
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let next = nextPartialResult
            let reduction = ReduceReduction<Upstream.Output, Output, Upstream.Failure, any Error>(
                result: initial
            ) { partial, input in
                Result { try next(partial, input) }
            }
            upstream.subscribe(ReducerInner(reduction: reduction, downstream: subscriber))
        }
    }
}

/// The reduction of `reduce` and `tryReduce`: fold with the closure, deliver the result at the end.
private struct ReduceReduction<Input, Output, UpstreamFailure: Error, Failure: Error>: Reduction {
    var name: String { "Reduce" }

    var result: Output?
    let next: (Output, Input) -> Result<Output, Failure>
    let convert: (UpstreamFailure) -> Failure

    init(result: Output, next: @escaping (Output, Input) -> Result<Output, Failure>)
    where UpstreamFailure == Failure {
        self.result = result
        self.next = next
        convert = { $0 }
    }

    init(result: Output, next: @escaping (Output, Input) -> Result<Output, Failure>) where Failure == any Error {
        self.result = result
        self.next = next
        convert = { $0 }
    }

    mutating func reduce(_ input: Input) -> ReductionStep<Output, Failure> {
        // Taken out while the closure runs, so a collection result stays uniquely referenced.
        guard let partial = result.take() else { internalInconsistency("reduce after its result was taken") }
        switch next(partial, input) {
        case .success(let value):
            result = value
            return .continue
        case .failure(let error):
            return .fail(error)
        }
    }

    mutating func resultOnFinish() -> Output? {
        result.take()
    }

    func failure(from error: UpstreamFailure) -> Failure {
        convert(error)
    }
}
