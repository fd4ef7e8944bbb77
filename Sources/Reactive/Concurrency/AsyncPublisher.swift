extension Publisher where Failure == Never {
    /// The elements produced by the publisher, as an asynchronous sequence.
    ///
    /// Each `next()` asks the publisher for one value (`.max(1)`). Cancelling the awaiting task ends
    /// the iteration (`next()` returns `nil`) and cancels the subscription; so does leaving the loop,
    /// which releases the iterator.
    ///
    ///     for await value in [1, 2, 3].publisher.values { print(value) }
    ///     // Prints: 1 2 3 (one per line)
    public var values: AsyncPublisher<Self> {
        AsyncPublisher(self)
    }
}

/// A publisher that exposes its elements as an asynchronous sequence; see ``Publisher/values-1dm9r``.
///
/// The publisher is subscribed when the iterator is made (`makeAsyncIterator()`, which `for await`
/// calls); the subscription lives as long as the iterator and no longer.
///
/// **Ownership:** a value that holds the publisher; each iterator owns its subscription.
///
/// **Thread safety:** value type; an iterator is used by one task at a time, as any iterator.
public struct AsyncPublisher<P: Publisher>: AsyncSequence where P.Failure == Never {
    public typealias Element = P.Output

    /// The iterator that produces elements of the asynchronous publisher sequence.
    public struct Iterator: AsyncIteratorProtocol {
        public typealias Element = P.Output

        private let lifetime: AsyncIterationLifetime<P.Output, Never>

        init(_ publisher: P) {
            lifetime = AsyncIterationLifetime(subscribingTo: publisher)
        }

        /// Produces the next element: `nil` when the publisher finished or the task was cancelled.
        public mutating func next() async -> P.Output? {
            switch await lifetime.inner.next() {
            case .success(let value): value
            }
        }
    }

    private let publisher: P

    /// Creates a publisher that exposes elements received from an upstream publisher as an
    /// asynchronous sequence.
    public init(_ publisher: P) {
        self.publisher = publisher
    }

    public func makeAsyncIterator() -> Iterator {
        Iterator(publisher)
    }
}

extension Publisher {
    /// The elements produced by the publisher, as a throwing asynchronous sequence.
    ///
    /// Each `next()` asks the publisher for one value (`.max(1)`); a failure is thrown once, after
    /// which the iteration is over. Cancelling the awaiting task ends the iteration (`next()` returns
    /// `nil`) and cancels the subscription; so does leaving the loop.
    ///
    ///     let first = try await URLSession.shared.dataTaskPublisher(for: url).values.first { _ in true }
    ///     print(first?.data.count ?? 0)
    ///     // Prints: 1270
    public var values: AsyncThrowingPublisher<Self> {
        AsyncThrowingPublisher(self)
    }
}
