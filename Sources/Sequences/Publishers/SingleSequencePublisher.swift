import Reactive

/// A publisher of one sequence named by its type (``Fibonacci``, ``Naturals``, ``Primes``, ``Factorial``): a
/// ``SequencePublisher`` whose kind the type fixes.
///
/// Element i is a ``Term`` with index `start + i`. It never delivers more than its subscriber requested,
/// finishes after `count` elements (at once, without demand, when `count` is zero) and, with `count`
/// `nil`, streams until cancelled. All of that is ``SequencePublisher``'s work: this protocol's extension
/// gives every conforming type the same initializers, properties and `receive(subscriber:)`, each
/// forwarding to the ``publisher`` it wraps, so the four named types differ only in their ``kind``.
///
/// **Ownership:** conforming types are value types; each subscription one creates is retained by its
/// subscriber until it finishes or is cancelled.
///
/// **Thread safety:** safe to subscribe from any thread; each subscription is safe to call from any thread.
public protocol SingleSequencePublisher: Publisher, Sendable where Output == Term, Failure == Never {
    /// The sequence this type publishes.
    static var kind: SequenceKind { get }

    /// The publisher that does the work; its kind is ``kind``.
    var publisher: SequencePublisher { get }

    /// Wraps `publisher`, whose kind must be ``kind`` (another traps, as misuse of the API): the
    /// extension's `init(start:count:)` is the way to make one.
    init(wrapping publisher: SequencePublisher)
}

extension SingleSequencePublisher {
    /// Creates a publisher of the elements from index `start`, `count` of them.
    ///
    /// > Warning: A negative `start` or `count` is misuse of the API and traps; validate client input first.
    ///
    /// - Parameters:
    ///   - start: The index of the first element to deliver; zero or more. See
    ///     ``SequenceKind/maxStart`` for what reaching it costs.
    ///   - count: The number of elements to deliver, zero or more; `nil` streams until cancelled.
    public init(start: Int = 0, count: Int? = nil) {
        self.init(wrapping: SequencePublisher(kind: Self.kind, start: start, count: count))
    }

    /// The index of the first element delivered.
    public var start: Int { publisher.start }

    /// How many elements to deliver before finishing, or `nil` for no limit.
    public var count: Int? { publisher.count }

    /// Counters that every subscription made from this publisher reports to, if any (tests only; see
    /// `SingleSequencePublisher+Testing.swift`).
    package var probe: SequenceProbe? { publisher.probe }

    public func receive<S: Subscriber>(subscriber: S) where S.Input == Term, S.Failure == Never {
        publisher.receive(subscriber: subscriber)
    }
}

extension SequencePublisher {
    /// This publisher, checked to be of `kind`: what a ``SingleSequencePublisher`` wraps.
    ///
    /// > Warning: Another kind is misuse of the API and traps.
    func requiring(_ kind: SequenceKind) -> SequencePublisher {
        if self.kind != kind {
            apiViolation("a \(kind) publisher cannot wrap a \(self.kind) one")
        }
        return self
    }
}
