extension Publisher {
    /// Replaces an empty stream with the provided element.
    ///
    /// If upstream finishes without publishing anything, it publishes `output` and finishes,
    /// waiting for downstream demand if it has none. Failures pass through.
    ///
    ///     let cancellable = Empty<Int, Never>()
    ///         .replaceEmpty(with: 0)
    ///         .sink { print($0) }
    ///     // Prints: 0
    ///
    /// - Parameter output: An element to emit when the upstream publisher finishes without emitting.
    /// - Returns: A publisher that replaces an empty stream with the provided output element.
    public func replaceEmpty(with output: Output) -> Publishers.ReplaceEmpty<Self> {
        Publishers.ReplaceEmpty(upstream: self, output: output)
    }
}

extension Publishers {
    /// A publisher that replaces an empty stream with a provided element.
    ///
    /// **Ownership:** a value; its subscription retains the element until the stream ends.
    ///
    /// **Thread safety:** value type; safe to subscribe from any thread.
    public struct ReplaceEmpty<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The element to deliver when the upstream publisher finishes without emitting.
        public let output: Upstream.Output

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// Creates a publisher that replaces an empty `upstream` with `output`.
        public init(upstream: Upstream, output: Output) {
            self.upstream = upstream
            self.output = output
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.subscribe(ReplacingInner(replacingEmptyWith: output, downstream: subscriber))
        }
    }
}
