/// A scheduler whose clock moves only when you advance it: for deterministic tests of
/// time-based operators, and for anything that must be driven step by step.
///
/// Not in Combine. Actions run on the thread that calls ``advance(by:)``, ``advance(to:)`` or
/// ``run()``, in order of their due time, and in the order they were scheduled for equal times.
/// Actions scheduled while advancing run in the same advance if they fall due within it.
///
///     let scheduler = VirtualTimeScheduler()
///     scheduler.schedule(after: scheduler.now.advanced(by: .seconds(1))) { print("tick") }
///     scheduler.advance(by: .seconds(1))
///     // Prints: tick
///
/// **Ownership:** retains scheduled actions until they run or are cancelled.
///
/// **Thread safety:** safe to call from any thread; actions run outside the lock.
public final class VirtualTimeScheduler: Scheduler, @unchecked Sendable {
    // @unchecked Sendable: `state` is only touched inside `lock`.

    /// An instant on the virtual clock: nanoseconds since the scheduler was created.
    public struct SchedulerTimeType: Strideable, Hashable, Comparable, Sendable, CustomStringConvertible {
        /// Nanoseconds since the scheduler's start.
        public let nanoseconds: Int

        public init(nanoseconds: Int) { self.nanoseconds = nanoseconds }

        public func distance(to other: SchedulerTimeType) -> Stride {
            Stride(nanoseconds: other.nanoseconds.subtractingReportingOverflow(nanoseconds).partialValue)
        }

        public func advanced(by n: Stride) -> SchedulerTimeType {
            let (sum, overflow) = nanoseconds.addingReportingOverflow(n.nanoseconds)
            return SchedulerTimeType(nanoseconds: overflow ? (n.nanoseconds > 0 ? .max : .min) : sum)
        }

        public var description: String { "\(nanoseconds)ns" }

        /// A span of virtual time, in nanoseconds.
        public struct Stride: SchedulerTimeIntervalConvertible, Comparable, SignedNumeric, ExpressibleByFloatLiteral,
            Hashable, Sendable, CustomStringConvertible
        {
            public typealias Magnitude = Int
            public typealias IntegerLiteralType = Int
            public typealias FloatLiteralType = Double

            /// The span in nanoseconds.
            public let nanoseconds: Int

            public init(nanoseconds: Int) { self.nanoseconds = nanoseconds }

            /// A literal is a number of seconds, as with `DispatchQueue`'s stride.
            public init(integerLiteral value: Int) { self = .seconds(value) }
            public init(floatLiteral value: Double) { self = .seconds(value) }
            public init?<T: BinaryInteger>(exactly source: T) {
                guard let value = Int(exactly: source) else { return nil }
                self = .seconds(value)
            }

            public var magnitude: Int { nanoseconds.magnitude > UInt(Int.max) ? .max : Int(nanoseconds.magnitude) }
            public var description: String { "\(nanoseconds)ns" }

            public static func < (lhs: Stride, rhs: Stride) -> Bool { lhs.nanoseconds < rhs.nanoseconds }
            public static func + (lhs: Stride, rhs: Stride) -> Stride {
                Stride(
                    nanoseconds: saturating(
                        lhs.nanoseconds.addingReportingOverflow(rhs.nanoseconds),
                        rhs.nanoseconds > 0
                    )
                )
            }
            public static func - (lhs: Stride, rhs: Stride) -> Stride {
                Stride(
                    nanoseconds: saturating(
                        lhs.nanoseconds.subtractingReportingOverflow(rhs.nanoseconds),
                        rhs.nanoseconds < 0
                    )
                )
            }
            public static func * (lhs: Stride, rhs: Stride) -> Stride {
                let positive = (lhs.nanoseconds < 0) == (rhs.nanoseconds < 0)
                return Stride(
                    nanoseconds: saturating(lhs.nanoseconds.multipliedReportingOverflow(by: rhs.nanoseconds), positive)
                )
            }
            public static func += (lhs: inout Stride, rhs: Stride) { lhs = lhs + rhs }
            public static func -= (lhs: inout Stride, rhs: Stride) { lhs = lhs - rhs }
            public static func *= (lhs: inout Stride, rhs: Stride) { lhs = lhs * rhs }

            public static func seconds(_ s: Int) -> Stride { scaled(s, by: 1_000_000_000) }
            public static func seconds(_ s: Double) -> Stride {
                let ns = (s * 1e9).rounded()
                guard ns.isFinite else { return Stride(nanoseconds: ns > 0 ? .max : .min) }
                return Stride(nanoseconds: ns >= Double(Int.max) ? .max : (ns <= Double(Int.min) ? .min : Int(ns)))
            }
            public static func milliseconds(_ ms: Int) -> Stride { scaled(ms, by: 1_000_000) }
            public static func microseconds(_ us: Int) -> Stride { scaled(us, by: 1_000) }
            public static func nanoseconds(_ ns: Int) -> Stride { Stride(nanoseconds: ns) }

            private static func scaled(_ value: Int, by factor: Int) -> Stride {
                Stride(nanoseconds: saturating(value.multipliedReportingOverflow(by: factor), value > 0))
            }

            private static func saturating(_ result: (partialValue: Int, overflow: Bool), _ positive: Bool) -> Int {
                result.overflow ? (positive ? .max : .min) : result.partialValue
            }
        }
    }

    public typealias SchedulerOptions = Never

    /// One scheduled action: due time, tie-break order, and the repeat interval if any.
    private struct Entry {
        let id: UInt64
        var due: SchedulerTimeType
        let interval: SchedulerTimeType.Stride?
        let action: () -> Void
    }

    private struct State {
        var now: SchedulerTimeType
        var nextID: UInt64 = 0
        /// Pending actions; kept small in tests, so a linear scan for the earliest is fine.
        var entries: [Entry] = []
    }

    private let lock = Lock()
    private var state: State  // Guarded by lock.

    /// Creates a scheduler whose clock starts at `now` (zero by default).
    public init(now: SchedulerTimeType = SchedulerTimeType(nanoseconds: 0)) {
        state = State(now: now)
    }

    public var now: SchedulerTimeType {
        lock.withLock { state.now }
    }

    public var minimumTolerance: SchedulerTimeType.Stride { .nanoseconds(0) }

    /// The number of actions waiting to run.
    public var pendingActionCount: Int {
        lock.withLock { state.entries.count }
    }

    public func schedule(options: Never?, _ action: @escaping () -> Void) {
        _ = enqueue(due: nil, interval: nil, action)
    }

    public func schedule(
        after date: SchedulerTimeType,
        tolerance: SchedulerTimeType.Stride,
        options: Never?,
        _ action: @escaping () -> Void
    ) {
        _ = enqueue(due: date, interval: nil, action)
    }

    public func schedule(
        after date: SchedulerTimeType,
        interval: SchedulerTimeType.Stride,
        tolerance: SchedulerTimeType.Stride,
        options: Never?,
        _ action: @escaping () -> Void
    ) -> any Cancellable {
        // A non-positive interval would repeat forever within one advance; one nanosecond is the floor.
        let id = enqueue(due: date, interval: max(interval, .nanoseconds(1)), action)
        return AnyCancellable { [weak self] in
            guard let self else { return }
            lock.withLock { state.entries.removeAll { $0.id == id } }
        }
    }

    /// Moves the clock forward by `stride`, running every action that falls due on the way.
    public func advance(by stride: SchedulerTimeType.Stride = .nanoseconds(0)) {
        advance(to: now.advanced(by: stride))
    }

    /// Moves the clock to `instant` (never backwards), running every action due by then, in order.
    public func advance(to instant: SchedulerTimeType) {
        while let action = takeNextAction(dueBy: instant) {
            action()
        }
        lock.withLock {
            if state.now < instant { state.now = instant }
        }
    }

    /// Runs every pending action, moving the clock to each one's due time, until none is left.
    ///
    /// Repeating actions would make this endless, so it stops after `maxSteps` actions.
    /// - Returns: The number of actions run.
    @discardableResult
    public func run(maxSteps: Int = 100_000) -> Int {
        var steps = 0
        while steps < maxSteps, let action = takeNextAction(dueBy: SchedulerTimeType(nanoseconds: .max)) {
            action()
            steps += 1
        }
        return steps
    }

    private func enqueue(due: SchedulerTimeType?, interval: SchedulerTimeType.Stride?, _ action: @escaping () -> Void)
        -> UInt64
    {
        lock.withLock {
            let id = state.nextID
            state.nextID += 1
            state.entries.append(
                Entry(id: id, due: max(due ?? state.now, state.now), interval: interval, action: action)
            )
            return id
        }
    }

    /// Removes (or reschedules, if repeating) the earliest action due by `limit`, advancing the clock to it.
    private func takeNextAction(dueBy limit: SchedulerTimeType) -> (() -> Void)? {
        lock.withLock {
            var best: Int?
            for index in state.entries.indices {
                let entry = state.entries[index]
                guard entry.due <= limit else { continue }
                if let current = best {
                    let other = state.entries[current]
                    if entry.due < other.due || (entry.due == other.due && entry.id < other.id) { best = index }
                } else {
                    best = index
                }
            }
            guard let index = best else { return nil }
            let entry = state.entries[index]
            if entry.due > state.now { state.now = entry.due }
            if let interval = entry.interval {
                // A repeating entry keeps its id, so that its cancellable can still find it.
                state.entries[index].due = entry.due.advanced(by: interval)
            } else {
                state.entries.remove(at: index)
            }
            return entry.action
        }
    }
}
