import Reactive
import Synchronization

/// Produces the values of one sequence in order, from index 0.
///
/// **Ownership:** a value type, owned by the ``TermCursor`` that drives it.
///
/// **Thread safety:** value type; not shared. The subscription lets one thread at a time drive it.
protocol TermGenerator {
    /// How many elements ``skip(_:)`` is asked to pass at once, so that a cancel is noticed between chunks.
    static var skipChunk: Int { get }

    /// Moves past the next `count` elements without producing them.
    ///
    /// - Returns: `false` if the sequence ran out on the way.
    mutating func skip(_ count: Int) -> Bool

    /// Produces the value of the next element, which is at `index`.
    ///
    /// - Returns: The value, or `nil` if the sequence has no more elements.
    mutating func next(index: Int) -> BigUInt?
}

/// Why a call to ``TermCursor/deliver(demand:to:cancelled:probe:)`` returned.
enum DeliveryOutcome {
    /// Every requested element was delivered; more need more demand.
    case demandExhausted
    /// The last element was delivered (or the sequence ran out): time to finish.
    case ended
    /// The subscription was cancelled; deliver nothing more.
    case cancelled
}

/// A position in one sequence: the generator, the index of the next element and the last index to deliver.
///
/// **Ownership:** a value type, held by its subscription's state machine while idle and by the delivering
/// thread while it delivers.
///
/// **Thread safety:** value type; not shared.
struct TermCursor<Generator: TermGenerator> {
    private var generator: Generator
    /// Elements before `start` that have not been skipped yet; skipped lazily, on the first demand.
    private var pendingSkip: Int
    private var nextIndex: Int
    private let lastIndex: Int

    /// - Parameters:
    ///   - start: The index of the first element to deliver; not negative.
    ///   - lastIndex: The index of the last element to deliver; at least `start`.
    init(_ generator: Generator, start: Int, lastIndex: Int) {
        self.generator = generator
        pendingSkip = start
        nextIndex = start
        self.lastIndex = lastIndex
    }

    /// Delivers up to `demand` elements (plus whatever `receive(_:)` asks for on the way) to `downstream`.
    ///
    /// The hot loop: per element it reads the cancelled flag (a relaxed atomic load), produces the value and
    /// calls the subscriber. It takes no lock.
    @inline(__always)
    mutating func deliver<Downstream: Subscriber>(
        demand initialDemand: Subscribers.Demand,
        to downstream: Downstream,
        cancelled: borrowing Atomic<Bool>,
        probe: SequenceProbe?
    ) -> DeliveryOutcome where Downstream.Input == Term, Downstream.Failure == Never {
        while pendingSkip > 0 {
            if cancelled.load(ordering: .relaxed) { return .cancelled }
            let chunk = min(pendingSkip, Generator.skipChunk)
            guard generator.skip(chunk) else { return .ended }
            pendingSkip -= chunk
        }
        var demand = initialDemand
        while demand > 0 {
            if cancelled.load(ordering: .relaxed) { return .cancelled }
            let index = nextIndex
            guard let value = generator.next(index: index) else { return .ended }
            probe?.recordProduced()
            demand -= 1
            let additional = downstream.receive(Term(index: index, value: value))
            if additional != .none {
                demand += additional
                probe?.recordRequested(additional)
            }
            if index == lastIndex { return .ended }
            // index < lastIndex <= Int.max, so this cannot overflow.
            nextIndex = index &+ 1
        }
        return .demandExhausted
    }
}

/// The cursor of whichever sequence a subscription streams: one case per ``SequenceKind``.
///
/// An enum rather than an existential so that each kind's delivery loop is compiled for its concrete
/// generator, with no dynamic dispatch per element.
///
/// **Ownership:** a value type, moved between the state machine and the delivering thread.
///
/// **Thread safety:** value type; not shared.
enum TermSource {
    case fibonacci(TermCursor<FibonacciGenerator>)
    case naturals(TermCursor<NaturalsGenerator>)
    case primes(TermCursor<PrimeSieve>)
    case factorial(TermCursor<FactorialGenerator>)

    /// The source for `kind`, positioned before `start`, ending after `lastIndex`.
    init(kind: SequenceKind, start: Int, lastIndex: Int) {
        switch kind {
        case .fibonacci: self = .fibonacci(TermCursor(FibonacciGenerator(), start: start, lastIndex: lastIndex))
        case .naturals: self = .naturals(TermCursor(NaturalsGenerator(), start: start, lastIndex: lastIndex))
        case .primes: self = .primes(TermCursor(PrimeSieve(), start: start, lastIndex: lastIndex))
        case .factorial: self = .factorial(TermCursor(FactorialGenerator(), start: start, lastIndex: lastIndex))
        }
    }

    /// Delivers through the cursor of this source's kind; see ``TermCursor/deliver(demand:to:cancelled:probe:)``.
    mutating func deliver<Downstream: Subscriber>(
        demand: Subscribers.Demand,
        to downstream: Downstream,
        cancelled: borrowing Atomic<Bool>,
        probe: SequenceProbe?
    ) -> DeliveryOutcome where Downstream.Input == Term, Downstream.Failure == Never {
        // Each case moves its cursor out, drives it, and puts it back: one copy per window, not per element.
        switch self {
        case .fibonacci(var cursor):
            let outcome = cursor.deliver(demand: demand, to: downstream, cancelled: cancelled, probe: probe)
            self = .fibonacci(cursor)
            return outcome
        case .naturals(var cursor):
            let outcome = cursor.deliver(demand: demand, to: downstream, cancelled: cancelled, probe: probe)
            self = .naturals(cursor)
            return outcome
        case .primes(var cursor):
            let outcome = cursor.deliver(demand: demand, to: downstream, cancelled: cancelled, probe: probe)
            self = .primes(cursor)
            return outcome
        case .factorial(var cursor):
            let outcome = cursor.deliver(demand: demand, to: downstream, cancelled: cancelled, probe: probe)
            self = .factorial(cursor)
            return outcome
        }
    }
}
