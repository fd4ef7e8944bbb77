import Reactive

/// A publisher of the prime numbers, the n-th prime (0-based) at index n: 2, 3, 5, 7, …
///
/// Element i is a ``Term`` with index `start + i`. It never delivers more than its subscriber requested,
/// finishes after `count` elements (at once, without demand, when `count` is zero) and, with `count`
/// `nil`, streams until cancelled. A segmented sieve with bounded memory produces them.
///
///     let cancellable = Primes(start: 0, count: 4).sink { print($0.value) }
///     // Prints: 2, 3, 5, 7 (one per line)
///
/// **Ownership:** a value type; each subscription it creates is retained by its subscriber until it
/// finishes or is cancelled.
///
/// **Thread safety:** safe to subscribe from any thread; each subscription is safe to call from any thread.
public struct Primes: SingleSequencePublisher {
    public static var kind: SequenceKind { .primes }

    public let publisher: SequencePublisher

    public init(wrapping publisher: SequencePublisher) {
        self.publisher = publisher.requiring(Self.kind)
    }
}
