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
public struct Primes: Publisher, Sendable {
    public typealias Output = Term
    public typealias Failure = Never

    /// The index of the first element delivered.
    public let start: Int

    /// How many elements to deliver before finishing, or `nil` for no limit.
    public let count: Int?

    /// Counters that every subscription made from this publisher reports to, if any (tests only; see
    /// `Primes+Testing.swift`).
    package let probe: SequenceProbe?

    /// Creates a publisher of the elements from index `start`, `count` of them.
    ///
    /// > Warning: A negative `start` or `count` is misuse of the API and traps; validate client input first.
    ///
    /// - Parameters:
    ///   - start: The index of the first element to deliver; zero or more. See
    ///     ``SequenceKind/maxStart`` for what reaching it costs.
    ///   - count: The number of elements to deliver, zero or more; `nil` streams until cancelled.
    public init(start: Int = 0, count: Int? = nil) {
        self.init(start: start, count: count, probe: nil)
    }

    public func receive<S: Subscriber>(subscriber: S) where S.Input == Term, S.Failure == Never {
        SequencePublisher(kind: .primes, start: start, count: count, probe: probe).receive(subscriber: subscriber)
    }
}
