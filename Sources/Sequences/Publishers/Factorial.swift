import Reactive

/// A publisher of the factorials, exact: n! at index n, starting with 0! = 1.
///
/// Element i is a ``Term`` with index `start + i`. It never delivers more than its subscriber requested,
/// finishes after `count` elements (at once, without demand, when `count` is zero) and, with `count`
/// `nil`, streams until cancelled. Reaching `start` takes `start` multiplications.
///
///     let cancellable = Factorial(start: 3, count: 4).sink { print($0.value) }
///     // Prints: 6, 24, 120, 720 (one per line)
///
/// **Ownership:** a value type; each subscription it creates is retained by its subscriber until it
/// finishes or is cancelled.
///
/// **Thread safety:** safe to subscribe from any thread; each subscription is safe to call from any thread.
public struct Factorial: SingleSequencePublisher {
    public static var kind: SequenceKind { .factorial }

    public let publisher: SequencePublisher

    public init(wrapping publisher: SequencePublisher) {
        self.publisher = publisher.requiring(Self.kind)
    }
}
