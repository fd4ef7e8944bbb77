extension Publisher {
    /// Converts any failure from the upstream publisher into a new error.
    ///
    ///     let cancellable = Fail<Int, CocoaError>(error: CocoaError(.fileNoSuchFile))
    ///         .mapError { _ in URLError(.badURL) }
    ///         .sink(receiveCompletion: { print($0) }, receiveValue: { _ in })
    ///     // Prints: failure(Foundation.URLError(...))
    ///
    /// - Parameter transform: A closure that takes the upstream failure and returns a new error.
    /// - Returns: A publisher that replaces any upstream failure with a new error.
    public func mapError<E: Error>(_ transform: @escaping (Failure) -> E) -> Publishers.MapError<Self, E> {
        Publishers.MapError(upstream: self, transform)
    }
}

extension Publishers {
    /// A publisher that converts any failure from the upstream publisher into a new error.
    ///
    /// **Ownership:** a value; its subscriber retains the closure until the stream ends.
    ///
    /// **Thread safety:** value type; the closure runs on whatever thread upstream completes on.
    public struct MapError<Upstream: Publisher, Failure: Error>: Publisher {
        public typealias Output = Upstream.Output

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// The closure that converts the upstream failure into a new error.
        public let transform: (Upstream.Failure) -> Failure

        /// Creates a publisher that converts the failure of `upstream` with `transform`.
        public init(upstream: Upstream, transform: @escaping (Upstream.Failure) -> Failure) {
            self.upstream = upstream
            self.transform = transform
        }

        /// Creates a publisher that converts the failure of `upstream` with `map`.
        public init(upstream: Upstream, _ map: @escaping (Upstream.Failure) -> Failure) {
            self.init(upstream: upstream, transform: map)
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.subscribe(FailureConvertingSubscriber("MapError", downstream: subscriber, convert: transform))
        }
    }
}
