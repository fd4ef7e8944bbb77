extension Sequence {
    /// A publisher that publishes the elements of this sequence, then finishes.
    ///
    ///     let cancellable = [1, 2, 3].publisher.sink { print($0) }
    ///     // Prints: 1
    ///     //         2
    ///     //         3
    @inlinable
    public var publisher: Publishers.Sequence<Self, Never> {
        Publishers.Sequence(sequence: self)
    }
}

extension Publishers {
    /// A publisher that publishes a given sequence of elements, as fast as its subscriber asks.
    ///
    /// Each subscriber gets its own pass over the sequence, which is iterated lazily: one element
    /// ahead of what was delivered, so that the completion follows the last element at once.
    /// An empty sequence finishes as soon as a subscriber attaches.
    ///
    ///     let cancellable = Publishers.Sequence<[Int], Never>(sequence: [1, 2]).sink { print($0) }
    ///     // Prints: 1
    ///     //         2
    ///
    /// **Ownership:** a value type holding the sequence; each subscription holds an iterator.
    ///
    /// **Thread safety:** value type; subscribing is safe from any thread, and each subscription
    /// is safe to request from and cancel from any thread.
    public struct Sequence<Elements: Swift.Sequence, Failure: Error>: Publisher {
        public typealias Output = Elements.Element

        /// The sequence of elements to publish.
        public let sequence: Elements

        /// Creates a publisher for the given sequence.
        @inlinable
        public init(sequence: Elements) {
            self.sequence = sequence
        }

        @inlinable
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            IteratingSubscription.subscribe(
                subscriber,
                to: sequence.makeIterator(),
                completion: .finished,
                name: "Sequence"
            )
        }
    }
}

extension Publishers.Sequence: Equatable where Elements: Equatable {}

extension Publishers.Sequence: Sendable where Elements: Sendable {}
