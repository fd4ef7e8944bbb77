extension Publisher {
    /// Ignores all upstream elements, but passes along the upstream publisher's completion state.
    ///
    /// Requests unlimited elements from upstream.
    ///
    ///     let cancellable = [1, 2, 3].publisher
    ///         .ignoreOutput()
    ///         .sink(receiveCompletion: { print($0) }, receiveValue: { _ in })
    ///     // Prints: finished
    ///
    /// - Returns: A publisher that ignores all upstream elements.
    public func ignoreOutput() -> Publishers.IgnoreOutput<Self> {
        Publishers.IgnoreOutput(upstream: self)
    }
}

extension Publishers {
    /// A publisher that ignores all upstream elements, but passes along the completion.
    ///
    /// **Ownership:** a value; its subscription is retained until the stream ends.
    ///
    /// **Thread safety:** value type; safe to subscribe from any thread.
    public struct IgnoreOutput<Upstream: Publisher>: Publisher {
        public typealias Output = Never
        public typealias Failure = Upstream.Failure

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// Creates a publisher that ignores the elements of `upstream`.
        public init(upstream: Upstream) {
            self.upstream = upstream
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let reduction = IgnoreOutputReduction<Upstream.Output, Failure>()
            upstream.subscribe(ReducerInner(reduction: reduction, downstream: subscriber))
        }
    }
}

/// The reduction of `ignoreOutput()`: nothing to fold, nothing to deliver but the completion.
private struct IgnoreOutputReduction<Input, Failure: Error>: Reduction {
    typealias UpstreamFailure = Failure

    var name: String { "IgnoreOutput" }

    mutating func reduce(_ input: Input) -> ReductionStep<Never, Failure> { .continue }

    mutating func resultOnFinish() -> Never? { nil }
}
