extension Publisher {
    /// Replaces any errors in the stream with the provided element.
    ///
    /// On failure it publishes `output` and finishes, waiting for downstream demand if it has none.
    ///
    ///     let cancellable = Fail<Int, URLError>(error: URLError(.badURL))
    ///         .replaceError(with: 0)
    ///         .sink { print($0) }
    ///     // Prints: 0
    ///
    /// - Parameter output: An element to emit when the upstream publisher fails.
    /// - Returns: A publisher that replaces an error from upstream with the provided output element.
    public func replaceError(with output: Output) -> Publishers.ReplaceError<Self> {
        Publishers.ReplaceError(upstream: self, output: output)
    }
}

extension Publishers {
    /// A publisher that replaces any errors in the stream with a provided element.
    ///
    /// **Ownership:** a value; its subscription retains the element until the stream ends.
    ///
    /// **Thread safety:** value type; safe to subscribe from any thread.
    public struct ReplaceError<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Never

        /// The element with which to replace errors from the upstream publisher.
        public let output: Upstream.Output

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// Creates a publisher that replaces a failure of `upstream` with `output`.
        public init(upstream: Upstream, output: Output) {
            self.upstream = upstream
            self.output = output
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.subscribe(ReplacingInner(replacingErrorWith: output, downstream: subscriber))
        }
    }
}
