import Reactive

/// A publisher of the Fibonacci numbers, exact: F(0) = 0, F(1) = 1, F(n) = F(n-1) + F(n-2).
///
/// Element i is a ``Term`` with index `start + i`. It never delivers more than its subscriber requested,
/// finishes after `count` elements (at once, without demand, when `count` is zero) and, with `count`
/// `nil`, streams until cancelled. Reaching `start` takes `start` additions.
///
///     let cancellable = Fibonacci(start: 10, count: 4).sink { print($0.value) }
///     // Prints: 55, 89, 144, 233 (one per line)
///
/// **Ownership:** a value type; each subscription it creates is retained by its subscriber until it
/// finishes or is cancelled.
///
/// **Thread safety:** safe to subscribe from any thread; each subscription is safe to call from any thread.
public struct Fibonacci: SingleSequencePublisher {
    public static var kind: SequenceKind { .fibonacci }

    public let publisher: SequencePublisher

    public init(wrapping publisher: SequencePublisher) {
        self.publisher = publisher.requiring(Self.kind)
    }
}
