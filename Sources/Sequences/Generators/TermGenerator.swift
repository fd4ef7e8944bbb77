import Reactive
import Synchronization

/// Produces the values of whichever sequence a subscription streams, in order from index 0.
///
/// A struct holding every kind's generator (the unused ones are empty and allocate nothing) and
/// switching on the kind per element, rather than a protocol: the subscription is generic over its
/// subscriber, and Swift does not specialize a generator protocol inside code that stays generic, so a
/// protocol would cost a witness-table call per element. A predictable switch costs well under one.
///
/// **Ownership:** a value type, owned by its ``TermCursor``.
///
/// **Thread safety:** value type; not shared.
struct TermGenerator {
    private let kind: SequenceKind
    // Only the one for `kind` is ever used.
    private var fibonacci = FibonacciGenerator()
    private var primes = PrimeSieve()
    private var factorial = FactorialGenerator()

    init(kind: SequenceKind) {
        self.kind = kind
    }

    /// How many elements ``skip(_:)`` is asked to pass at once, so that a cancel is noticed between chunks.
    var skipChunk: Int {
        switch kind {
        case .fibonacci: FibonacciGenerator.skipChunk
        case .naturals: .max
        case .primes: PrimeSieve.skipChunk
        case .factorial: FactorialGenerator.skipChunk
        }
    }

    /// Moves past the next `count` elements without producing them.
    ///
    /// - Returns: `false` if the sequence ran out on the way.
    mutating func skip(_ count: Int) -> Bool {
        switch kind {
        case .fibonacci: fibonacci.skip(count)
        case .naturals: true
        case .primes: primes.skip(count)
        case .factorial: factorial.skip(count)
        }
    }

    /// Produces the value of the next element, which is at `index`.
    ///
    /// - Returns: The value, or `nil` if the sequence has no more elements.
    @inline(__always)
    mutating func next(index: Int) -> BigUInt? {
        switch kind {
        case .fibonacci: fibonacci.next()
        // Indices are never negative, so the conversion is exact.
        case .naturals: BigUInt(UInt64(truncatingIfNeeded: index))
        case .primes: primes.next()
        case .factorial: factorial.next()
        }
    }
}
