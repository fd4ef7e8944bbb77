/// A publisher that exposes its elements as a throwing asynchronous sequence; see
/// ``Publisher/values-v7nz``.
///
/// **Ownership:** a value that holds the publisher; each iterator owns its subscription.
///
/// **Thread safety:** value type; an iterator is used by one task at a time, as any iterator.
public struct AsyncThrowingPublisher<P: Publisher>: AsyncSequence {
    public typealias Element = P.Output

    /// The iterator that produces elements of the asynchronous publisher sequence.
    public struct Iterator: AsyncIteratorProtocol {
        public typealias Element = P.Output

        private let lifetime: AsyncIterationLifetime<P.Output, P.Failure>

        init(_ publisher: P) {
            lifetime = AsyncIterationLifetime(subscribingTo: publisher)
        }

        /// Produces the next element: `nil` when the publisher finished or the task was cancelled.
        /// - Throws: The publisher's failure, once.
        public mutating func next() async throws -> P.Output? {
            try await lifetime.inner.next().get()
        }
    }

    private let publisher: P

    /// Creates a publisher that exposes elements received from an upstream publisher as a throwing
    /// asynchronous sequence.
    public init(_ publisher: P) {
        self.publisher = publisher
    }

    public func makeAsyncIterator() -> Iterator {
        Iterator(publisher)
    }
}
