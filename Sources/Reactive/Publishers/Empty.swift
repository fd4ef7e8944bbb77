/// A publisher that never publishes any values, and optionally finishes immediately.
///
/// With `completeImmediately: false` it never completes either: useful as a placeholder or in
/// tests of publishers that must not end.
///
///     let cancellable = Empty<Int, Never>().sink(receiveCompletion: { print($0) }, receiveValue: { print($0) })
///     // Prints: finished
///
/// **Ownership:** a value type; holds nothing.
///
/// **Thread safety:** value type; subscribing is safe from any thread.
public struct Empty<Output, Failure: Error>: Publisher, Equatable, Sendable {
    /// Whether the publisher finishes as soon as a subscriber attaches.
    public let completeImmediately: Bool

    /// Creates an empty publisher.
    ///
    /// - Parameter completeImmediately: Whether to finish at once (`true`, the default) or never.
    public init(completeImmediately: Bool = true) {
        self.completeImmediately = completeImmediately
    }

    /// Creates an empty publisher with the given output and failure types.
    public init(completeImmediately: Bool = true, outputType: Output.Type, failureType: Failure.Type) {
        self.init(completeImmediately: completeImmediately)
    }

    public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
        subscriber.receive(subscription: Subscriptions.empty)
        if completeImmediately {
            subscriber.receive(completion: .finished)
        }
    }
}
