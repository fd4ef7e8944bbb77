import Reactive
import Synchronization

/// A position in one sequence: the generator, the index of the next element and the last index to deliver.
///
/// **Ownership:** a value type, held by its subscription's state machine while idle and by the delivering
/// thread while it delivers.
///
/// **Thread safety:** value type; not shared.
struct TermCursor {
    private var generator: TermGenerator
    /// Elements before `start` that have not been skipped yet; skipped lazily, on the first demand.
    private var pendingSkip: Int
    private var nextIndex: Int
    private let lastIndex: Int

    /// - Parameters:
    ///   - kind: The sequence.
    ///   - start: The index of the first element to deliver; not negative.
    ///   - lastIndex: The index of the last element to deliver; at least `start`.
    init(kind: SequenceKind, start: Int, lastIndex: Int) {
        generator = TermGenerator(kind: kind)
        pendingSkip = start
        nextIndex = start
        self.lastIndex = lastIndex
    }

    /// Skips to the start now rather than on the first demand, asking `isCancelled` between chunks.
    ///
    /// - Returns: `false` if `isCancelled` said so (the cursor is then partway and must not be used);
    ///   `true` once the start is reached, or the sequence ran out on the way (the first delivery then ends).
    mutating func reachStart(isCancelled: () -> Bool) -> Bool {
        while pendingSkip > 0 {
            if isCancelled() { return false }
            let chunk = min(pendingSkip, generator.skipChunk)
            guard generator.skip(chunk) else { return true }
            pendingSkip -= chunk
        }
        return true
    }

    /// Adds the demand a subscriber returned to the delivery loop's budget; a sum that overflows `Int`
    /// is as good as unlimited.
    @inline(__always)
    private static func add(
        _ additional: Subscribers.Demand,
        to budget: inout Int,
        unlimited: inout Bool,
        probe: SequenceProbe?
    ) {
        guard additional > 0 else { return }
        if let extra = additional.max {
            let (sum, overflow) = budget.addingReportingOverflow(extra)
            budget = sum
            unlimited = unlimited || overflow
        } else {
            unlimited = true
        }
        if let probe { probe.recordRequested(additional) }
    }

    /// Delivers up to `demand` elements (plus whatever `receive(_:)` asks for on the way) to `downstream`.
    ///
    /// The hot loop: per element it reads the cancelled flag (a relaxed atomic load), produces the value and
    /// calls the subscriber. It takes no lock, and counts demand in a plain integer: `Demand`'s operators
    /// read its `.none` and `.unlimited` globals through accessors that cannot be inlined across modules.
    mutating func deliver<Downstream: Subscriber>(
        demand: Subscribers.Demand,
        to downstream: Downstream,
        cancelled: borrowing Atomic<Bool>,
        probe: SequenceProbe?
    ) -> DeliveryOutcome where Downstream.Input == Term, Downstream.Failure == Never {
        if pendingSkip > 0, let stopped = skipToStart(cancelled: cancelled, probe: probe) { return stopped }
        // `budget` is meaningless while `unlimited`.
        var unlimited = demand.max == nil
        var budget = demand.max ?? 0
        while unlimited || budget > 0 {
            if cancelled.load(ordering: .relaxed) { return .cancelled }
            let index = nextIndex
            guard let value = generator.next(index: index) else { return .ended }
            if let probe { probe.recordProduced() }
            if !unlimited { budget &-= 1 }
            let additional = downstream.receive(Term(index: index, value: value))
            Self.add(additional, to: &budget, unlimited: &unlimited, probe: probe)
            if index == lastIndex { return .ended }
            // index < lastIndex <= Int.max, so this cannot overflow.
            nextIndex = index &+ 1
        }
        return .demandExhausted
    }

    /// How many terms ``deliver(demand:inBatchesTo:cancelled:probe:)`` produces before handing them over:
    /// a batch lives on the delivering thread's stack (24 bytes a term).
    static let batchCapacity = 128

    /// Delivers up to `demand` elements (plus whatever the subscriber asks for on the way) to `downstream`,
    /// in batches of up to ``batchCapacity``.
    ///
    /// The same contract as ``deliver(demand:to:cancelled:probe:)``, a batch at a time: a batch never
    /// exceeds the demand left, the cancelled flag is read before each batch, and the demand a batch
    /// returns is added after it. The batch lives on the stack; nothing is allocated.
    mutating func deliver(
        demand: Subscribers.Demand,
        inBatchesTo downstream: TermBatchReceiver,
        cancelled: borrowing Atomic<Bool>,
        probe: SequenceProbe?
    ) -> DeliveryOutcome {
        if pendingSkip > 0, let stopped = skipToStart(cancelled: cancelled, probe: probe) { return stopped }
        // `budget` is meaningless while `unlimited`.
        var unlimited = demand.max == nil
        var budget = demand.max ?? 0
        let capacity = Self.batchCapacity
        return withUnsafeTemporaryAllocation(of: Term.self, capacity: capacity) { batch -> DeliveryOutcome in
            let base = batch.baseAddress!
            while unlimited || budget > 0 {
                if cancelled.load(ordering: .relaxed) { return .cancelled }
                let limit = unlimited ? capacity : min(budget, capacity)
                var filled = 0
                var ended = false
                // Whether a term of this batch holds a limb array; terms below 10^18 need no destroying.
                var holdsArrays = false
                while filled < limit {
                    let index = nextIndex
                    guard let value = generator.next(index: index) else {
                        ended = true
                        break
                    }
                    if value.smallValue == nil { holdsArrays = true }
                    (base + filled).initialize(to: Term(index: index, value: value))
                    filled &+= 1
                    if index == lastIndex {
                        ended = true
                        break
                    }
                    // index < lastIndex <= Int.max, so this cannot overflow.
                    nextIndex = index &+ 1
                }
                if filled > 0 {
                    if let probe { probe.recordProduced(filled) }
                    if !unlimited { budget &-= filled }
                    let additional = downstream.receive(UnsafeBufferPointer(start: base, count: filled))
                    // One by one: `deinitialize(count:)` destroys through the type's value witness, per term.
                    // A batch of values below 10^18 holds no references: leaving it is destroying it.
                    if holdsArrays {
                        for offset in 0..<filled { _ = (base + offset).move() }
                    }
                    Self.add(additional, to: &budget, unlimited: &unlimited, probe: probe)
                }
                if ended { return .ended }
            }
            return .demandExhausted
        }
    }

    /// Skips the elements before `start` (on the first delivery), reading the cancelled flag between chunks.
    ///
    /// - Returns: `nil` once the start is reached, else why delivery stops (cancelled, or the sequence ran out).
    private mutating func skipToStart(cancelled: borrowing Atomic<Bool>, probe: SequenceProbe?) -> DeliveryOutcome? {
        while pendingSkip > 0 {
            if cancelled.load(ordering: .relaxed) { return .cancelled }
            let chunk = min(pendingSkip, generator.skipChunk)
            guard generator.skip(chunk) else { return .ended }
            pendingSkip -= chunk
        }
        if let probe { probe.recordStartReached() }
        return nil
    }
}
