extension Optional {
    /// A publisher that publishes this optional's value once and finishes, or just finishes if it is `nil`.
    ///
    ///     let cancellable = Optional(5).publisher.sink { print($0) }
    ///     // Prints: 5
    @inlinable
    public var publisher: Publisher {
        Publisher(self)
    }

    /// A publisher that publishes an optional value to each subscriber exactly once, if the
    /// optional has a value, and then finishes.
    ///
    ///     let c = Optional<Int>.Publisher(nil).sink(receiveCompletion: { print($0) }, receiveValue: { _ in })
    ///     // Prints: finished
    ///
    /// **Ownership:** a value type holding the optional.
    ///
    /// **Thread safety:** value type; subscribing is safe from any thread.
    public struct Publisher: Reactive.Publisher {
        public typealias Output = Wrapped
        public typealias Failure = Never

        /// The result to deliver to each subscriber.
        public let output: Wrapped?

        /// Creates a publisher to emit the value of the optional, or to finish immediately if it is `nil`.
        @inlinable
        public init(_ output: Output?) {
            self.output = output
        }

        @inlinable
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Never {
            if let output {
                subscriber.receive(
                    subscription: SingleValueSubscription(value: output, downstream: subscriber, name: "Optional")
                )
            } else {
                subscriber.receive(subscription: Subscriptions.empty)
                subscriber.receive(completion: .finished)
            }
        }
    }
}

extension Optional.Publisher: Equatable where Wrapped: Equatable {}

extension Optional.Publisher: Sendable where Wrapped: Sendable {}
