extension Publisher {
    /// Collects all received elements, and emits a single array of the collection when the
    /// upstream publisher finishes.
    ///
    /// Requests unlimited elements from upstream; the array waits for downstream demand. If upstream
    /// fails, the elements collected so far are discarded and the error is republished.
    ///
    ///     let cancellable = [1, 2, 3].publisher
    ///         .collect()
    ///         .sink { print($0) }
    ///     // Prints: [1, 2, 3]
    ///
    /// - Returns: A publisher that publishes an array of all received elements.
    public func collect() -> Publishers.Collect<Self> {
        Publishers.Collect(upstream: self)
    }
}

extension Publishers {
    /// A publisher that buffers all received elements and publishes them as one array when upstream
    /// finishes.
    ///
    /// **Ownership:** a value; its subscription retains the buffer until it delivers or is cancelled.
    ///
    /// **Thread safety:** value type; safe to subscribe from any thread.
    public struct Collect<Upstream: Publisher>: Publisher {
        public typealias Output = [Upstream.Output]
        public typealias Failure = Upstream.Failure

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// Creates a publisher that collects all elements of `upstream`.
        public init(upstream: Upstream) {
            self.upstream = upstream
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let reduction = CollectReduction<Upstream.Output, Failure>()
            upstream.subscribe(ReducerInner(reduction: reduction, downstream: subscriber))
        }
    }
}

/// The reduction of `collect()`: append every element, deliver the array at the end.
private struct CollectReduction<Input, Failure: Error>: Reduction {
    typealias UpstreamFailure = Failure

    var name: String { "Collect" }

    var elements: [Input] = []

    mutating func reduce(_ input: Input) -> ReductionStep<[Input], Failure> {
        elements.append(input)
        return .continue
    }

    mutating func resultOnFinish() -> [Input]? {
        defer { elements = [] }
        return elements
    }
}
