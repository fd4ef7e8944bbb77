/// A publisher that emits an output to each subscriber just once, and then finishes.
///
/// The value is sent on the subscriber's first demand. `Just` cannot fail.
///
///     let cancellable = Just(42).sink { print($0) }
///     // Prints: 42
///
/// **Ownership:** a value type holding its output; each subscription holds a copy until it finishes.
///
/// **Thread safety:** value type; subscribing is safe from any thread.
public struct Just<Output>: Publisher {
    public typealias Failure = Never

    /// The one element that the publisher emits.
    public let output: Output

    /// Creates a publisher that emits `output` once, then finishes.
    @inlinable
    public init(_ output: Output) {
        self.output = output
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Never {
        subscriber.receive(subscription: SingleValueSubscription(value: output, downstream: subscriber, name: "Just"))
    }
}

extension Just: Equatable where Output: Equatable {}

extension Just: Sendable where Output: Sendable {}
