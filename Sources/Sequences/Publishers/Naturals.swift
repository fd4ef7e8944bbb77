import Reactive

/// A publisher of the natural numbers 0, 1, 2, …, where each value equals its index.
///
/// Element i is a ``Term`` with index `start + i`. It never delivers more than its subscriber requested,
/// finishes after `count` elements (at once, without demand, when `count` is zero) and, with `count`
/// `nil`, streams until cancelled. The cheapest stream: a few nanoseconds per element.
///
///     let cancellable = Naturals(start: 5, count: 4).sink { print($0.value) }
///     // Prints: 5, 6, 7, 8 (one per line)
///
/// **Ownership:** a value type; each subscription it creates is retained by its subscriber until it
/// finishes or is cancelled.
///
/// **Thread safety:** safe to subscribe from any thread; each subscription is safe to call from any thread.
public struct Naturals: SingleSequencePublisher {
    public static var kind: SequenceKind { .naturals }

    public let publisher: SequencePublisher

    public init(wrapping publisher: SequencePublisher) {
        self.publisher = publisher.requiring(Self.kind)
    }
}
