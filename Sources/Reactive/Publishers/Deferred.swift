/// A publisher that awaits subscription before running the supplied closure to create a
/// publisher for the new subscriber.
///
/// Each subscription gets a fresh publisher, so the work the publisher does (a `Future`'s
/// closure, a request) happens per subscriber and only when someone subscribes.
///
///     let deferred = Deferred { Just(Int.random(in: 1...1)) }
///     let cancellable = deferred.sink { print($0) }
///     // Prints: 1
///
/// **Ownership:** a value type holding the closure.
///
/// **Thread safety:** value type; subscribing is safe from any thread if the closure is.
public struct Deferred<DeferredPublisher: Publisher>: Publisher {
    public typealias Output = DeferredPublisher.Output
    public typealias Failure = DeferredPublisher.Failure

    /// The closure to execute when this publisher receives a subscription.
    public let createPublisher: () -> DeferredPublisher

    /// Creates a deferred publisher.
    ///
    /// - Parameter createPublisher: The closure to execute when calling `subscribe(_:)`.
    public init(createPublisher: @escaping () -> DeferredPublisher) {
        self.createPublisher = createPublisher
    }

    public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
        createPublisher().subscribe(subscriber)
    }
}
