import Reactive

/// A publisher of any of the sequences in ``SequenceKind``, chosen at run time: the one type a service
/// needs to stream whichever sequence a request names.
///
/// It delivers the elements with indices `start`, `start + 1`, … (at most `count` of them, or until
/// cancelled when `count` is `nil`), never more than its subscriber requested, and finishes after the
/// last one; with `count == 0` it finishes at once, without demand. A stream whose indices would pass
/// `Int.max` stops there. Its subscription holds the generator for the kind, so nothing is
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

    /// Counters that every subscription made from this publisher reports to, if any (tests only; see
    /// `SequencePublisher+Testing.swift`).
    package let probe: SequenceProbe?

    /// A cursor that has already reached `start` (see ``reachingStart(isCancelled:)``); each subscription
    /// starts from a copy of it instead of doing that work again.
    private let preparedCursor: TermCursor?

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
    public init(kind: SequenceKind, start: Int = 0, count: Int? = nil) {
        self.init(kind: kind, start: start, count: count, probe: nil)
    }

    /// The designated initializer; ``init(kind:start:count:)`` without a probe, and the package-level
    /// `init(kind:start:count:probe:)` of `SequencePublisher+Testing.swift`, go through it.
    init(checkedKind kind: SequenceKind, start: Int, count: Int?, probe: SequenceProbe?) {
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
        self.preparedCursor = nil
    }

    private init(_ publisher: SequencePublisher, preparedCursor: TermCursor) {
        kind = publisher.kind
        start = publisher.start
        count = publisher.count
        probe = publisher.probe
        self.preparedCursor = preparedCursor
    }

    /// The `start` beyond which ``startIsCostly`` says reaching it is worth moving off a latency-sensitive
    /// thread: below it every kind gets there in well under a millisecond.
    public static let costlyStartThreshold = 1_024

    /// Whether reaching `start` takes real work (more than about a millisecond of one core; up to a
    /// quarter of a second at ``SequenceKind/maxStart``), so that a server should do it on a worker
    /// thread, with ``reachingStart(isCancelled:)``, rather than on an event loop. Naturals never do.
    public var startIsCostly: Bool {
        guard preparedCursor == nil, lastIndex != nil else { return false }
        return kind != .naturals && start > Self.costlyStartThreshold
    }

    /// Does the work of reaching `start` now, on the calling thread, and returns a publisher whose
    /// subscriptions begin delivering at `start` at once (the same elements as this one).
    ///
    /// The work is done in chunks; `isCancelled` is asked between them (every few hundred microseconds
    /// at most), and when it answers `true` the work stops and the result is `nil`: the probe, if any,
    /// then records a cancel, as it does for a subscription cancelled before its first element.
    ///
    /// - Complexity: that of reaching `start` (see ``SequenceKind/maxStart``); O(1) when there is
    ///   nothing to reach.
    public func reachingStart(isCancelled: () -> Bool) -> SequencePublisher? {
        guard preparedCursor == nil, let lastIndex else { return self }
        var cursor = TermCursor(kind: kind, start: start, lastIndex: lastIndex)
        guard cursor.reachStart(isCancelled: isCancelled) else {
            probe?.recordCancelled()
            return nil
        }
        probe?.recordStartReached()
        return SequencePublisher(self, preparedCursor: cursor)
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
            cursor: preparedCursor ?? TermCursor(kind: kind, start: start, lastIndex: lastIndex),
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
