extension Publisher where Failure == Never {
    /// Changes the failure type declared by the upstream publisher, which cannot fail.
    ///
    ///     let publisher: AnyPublisher<Int, any Error> = Just(1)
    ///         .setFailureType(to: (any Error).self)
    ///         .eraseToAnyPublisher()
    ///     // Prints: nothing; the types now line up for `flatMap`, `catch` and the like.
    ///
    /// - Parameter failureType: The failure type to declare.
    /// - Returns: A publisher of the same elements that declares the new failure type.
    public func setFailureType<E: Error>(to failureType: E.Type) -> Publishers.SetFailureType<Self, E> {
        Publishers.SetFailureType(upstream: self)
    }
}

extension Publishers {
    /// A publisher that appears to send a specified failure type, though its upstream cannot fail.
    ///
    /// **Ownership:** a value; adds nothing to the chain but a type.
    ///
    /// **Thread safety:** value type; safe to subscribe from any thread.
    public struct SetFailureType<Upstream: Publisher, Failure: Error>: Publisher where Upstream.Failure == Never {
        public typealias Output = Upstream.Output

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// Creates a publisher that declares `Failure` for the elements of `upstream`.
        public init(upstream: Upstream) {
            self.upstream = upstream
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.subscribe(
                FailureConvertingSubscriber("SetFailureType", downstream: subscriber) { _ in
                    internalInconsistency("a publisher whose Failure is Never failed")
                }
            )
        }

        /// Declares another failure type instead, as Combine does.
        ///
        ///     let publisher = Just(1).setFailureType(to: URLError.self)
        ///         .setFailureType(to: CocoaError.self)
        ///         .eraseToAnyPublisher()
        ///     // Prints: nothing; the declared failure is now CocoaError.
        public func setFailureType<E: Error>(to failure: E.Type) -> Publishers.SetFailureType<Upstream, E> {
            Publishers.SetFailureType(upstream: upstream)
        }
    }
}
