extension Result {
    /// A publisher that publishes this result once: the success value (then finishes), or the failure.
    ///
    ///     let cancellable = Result<Int, Never>.success(7).publisher.sink { print($0) }
    ///     // Prints: 7
    @inlinable
    public var publisher: Publisher {
        Publisher(self)
    }

    /// A publisher that publishes an output to each subscriber exactly once then finishes, or
    /// fails immediately without producing any elements.
    ///
    ///     let cancellable = Result<Int, Never>.Publisher(3).sink { print($0) }
    ///     // Prints: 3
    ///
    /// **Ownership:** a value type holding the result.
    ///
    /// **Thread safety:** value type; subscribing is safe from any thread.
    public struct Publisher: Reactive.Publisher {
        public typealias Output = Success

        /// The result to deliver to each subscriber.
        public let result: Result<Output, Failure>

        /// Creates a publisher that delivers the specified result.
        @inlinable
        public init(_ result: Result<Output, Failure>) {
            self.result = result
        }

        /// Creates a publisher that sends the specified output to all subscribers and finishes normally.
        @inlinable
        public init(_ output: Output) {
            self.init(.success(output))
        }

        /// Creates a publisher that immediately terminates upon subscription with the given failure.
        @inlinable
        public init(_ failure: Failure) {
            self.init(.failure(failure))
        }

        @inlinable
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            switch result {
            case .success(let value):
                let subscription = SingleValueSubscription(value: value, downstream: subscriber, name: "Once")
                subscriber.receive(subscription: subscription)
            case .failure(let error):
                subscriber.receive(subscription: Subscriptions.empty)
                subscriber.receive(completion: .failure(error))
            }
        }
    }
}

extension Result.Publisher: Equatable where Success: Equatable, Failure: Equatable {}

extension Result.Publisher: Sendable where Success: Sendable {}
