/// A type that can deliver a sequence of values over time to subscribers that ask for them.
///
/// A publisher delivers elements only in response to demand: a ``Subscriber`` receives a
/// ``Subscription`` and calls ``Subscription/request(_:)``; the publisher never sends more
/// values than the sum of what was requested (plus what ``Subscriber/receive(_:)`` returned).
/// It finishes or fails at most once, and after ``Cancellable/cancel()`` it sends nothing more.
///
/// **Ownership:** a publisher is a description of work; usually a value type. The
/// subscription it creates is retained by its subscriber until completion or cancellation.
///
/// **Thread safety:** `receive(subscriber:)` may be called from any thread.
///
///     let cancellable = [1, 2, 3].publisher.map { $0 * 2 }.sink { print($0) }
///     // Prints: 2
///     //         4
///     //         6
public protocol Publisher<Output, Failure> {
    /// The kind of values published by this publisher.
    associatedtype Output

    /// The kind of errors this publisher might publish.
    associatedtype Failure: Error

    /// Attaches the specified subscriber to this publisher.
    ///
    /// Implementations call ``Subscriber/receive(subscription:)`` exactly once.
    /// Callers normally use ``Publisher/subscribe(_:)-(Subscriber)`` instead.
    func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure
}

extension Publisher {
    /// Attaches the specified subscriber to this publisher.
    ///
    /// Always call this function instead of ``Publisher/receive(subscriber:)``.
    // Always inlined: every operator calls it with a subscriber type that wraps the last one's, and
    // the optimizer stops specializing a generic function whose argument type keeps growing, which
    // leaves whole chains running unspecialized (bench/README.md, "Reactive: why the hot paths are
    // inlinable").
    @inlinable
    @inline(__always)
    public func subscribe<S: Subscriber>(_ subscriber: S) where S.Input == Output, S.Failure == Failure {
        receive(subscriber: subscriber)
    }
}
