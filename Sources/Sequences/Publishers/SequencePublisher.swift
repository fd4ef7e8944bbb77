import Reactive

/// A publisher of any of the sequences in ``SequenceKind``, chosen at run time: the one type a service
/// needs to stream whichever sequence a request names.
///
/// It delivers the elements with indices `start`, `start + 1`, … (at most `count` of them, or until
/// cancelled when `count` is `nil`), never more than its subscriber requested, and finishes after the
/// last one; with `count == 0` it finishes at once, without demand. A stream whose indices would pass
/// `Int.max` stops there. Its subscription holds the concrete generator for the kind, so nothing is
/// type-erased per element.
///
///     let cancellable = SequencePublisher(kind: .primes, start: 3, count: 3)
///         .sink { print($0.index, $0.value) }
///     // Prints: 3 7, then 4 11, then 5 13 (one per line)
///
/// **Ownership:** a value type; each subscription it creates is retained by its subscriber until it
/// finishes or is cancelled.
///
/// **Thread safety:** safe to subscribe from any thread; each subscription is safe to call from any thread.
public struct SequencePublisher: Publisher, Sendable {
    public typealias Output = Term
    public typealias Failure = Never

    /// Which sequence to stream.
    public let kind: SequenceKind

    /// The index of the first element delivered.
    public let start: Int

    /// How many elements to deliver before finishing, or `nil` for no limit.
    public let count: Int?

    /// Counters that every subscription made from this publisher reports to, if any.
    public let probe: SequenceProbe?

    /// Creates a publisher of `kind`, from index `start`, for `count` elements.
    ///
    /// Any non-negative values are accepted: a `start` past ``SequenceKind/maxStart`` only makes the
    /// first element slow (see there), and a `start + count` past `Int.max` just stops at `Int.max`.
    ///
    /// > Warning: A negative `start` or `count` is misuse of the API and traps; validate client input first.
    ///
    /// - Parameters:
    ///   - kind: The sequence.
    ///   - start: The index of the first element to deliver; zero or more.
    ///   - count: The number of elements to deliver, zero or more; `nil` streams until cancelled.
    ///   - probe: Counters to report to, for tests.
    public init(kind: SequenceKind, start: Int = 0, count: Int? = nil, probe: SequenceProbe? = nil) {
        if start < 0 {
            apiViolation("start must not be negative, got \(start)")
        }
        if let count, count < 0 {
            apiViolation("count must not be negative, got \(count)")
        }
        self.kind = kind
        self.start = start
        self.count = count
        self.probe = probe
    }

    public func receive<S: Subscriber>(subscriber: S) where S.Input == Term, S.Failure == Never {
        guard let lastIndex else {
            subscriber.receive(subscription: Subscriptions.empty)
            probe?.recordFinished()
            subscriber.receive(completion: .finished)
            return
        }
        let subscription = SequenceSubscription(
            kind: kind,
            downstream: subscriber,
            source: TermSource(kind: kind, start: start, lastIndex: lastIndex),
            probe: probe
        )
        subscriber.receive(subscription: subscription)
    }

    /// The index of the last element to deliver, or `nil` when there is none (`count == 0`).
    var lastIndex: Int? {
        guard let count else { return .max }
        guard count > 0 else { return nil }
        let (last, overflow) = start.addingReportingOverflow(count - 1)
        return overflow ? .max : last
    }
}
