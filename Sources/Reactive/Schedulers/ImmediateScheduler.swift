/// A scheduler that performs every action at once, on the calling thread.
///
/// Scheduling an action "after" a date runs it immediately too; time never passes.
///
/// **Thread safety:** safe to call from any thread. Audited: no lock needed because it has no state.
public struct ImmediateScheduler: Scheduler, Sendable {
    /// The time type of the immediate scheduler: a count that never advances.
    public struct SchedulerTimeType: Strideable, Sendable, Hashable {
        /// The increment by which the immediate scheduler counts time.
        public struct Stride: SchedulerTimeIntervalConvertible, Comparable, SignedNumeric, ExpressibleByFloatLiteral,
            Codable, Sendable, Hashable
        {
            public typealias Magnitude = Int
            public typealias IntegerLiteralType = Int
            public typealias FloatLiteralType = Double

            /// The value of this time interval, in the scheduler's abstract units.
            public var magnitude: Int

            public init(_ value: Int) { magnitude = value }
            public init(integerLiteral value: Int) { magnitude = value }
            public init(floatLiteral value: Double) { magnitude = Int(clamping: Int64(exactly: value.rounded()) ?? 0) }
            public init?<T: BinaryInteger>(exactly source: T) {
                guard let value = Int(exactly: source) else { return nil }
                magnitude = value
            }

            public static func < (lhs: Stride, rhs: Stride) -> Bool { lhs.magnitude < rhs.magnitude }
            public static func * (lhs: Stride, rhs: Stride) -> Stride { Stride(lhs.magnitude &* rhs.magnitude) }
            public static func + (lhs: Stride, rhs: Stride) -> Stride { Stride(lhs.magnitude &+ rhs.magnitude) }
            public static func - (lhs: Stride, rhs: Stride) -> Stride { Stride(lhs.magnitude &- rhs.magnitude) }
            public static func *= (lhs: inout Stride, rhs: Stride) { lhs = lhs * rhs }
            public static func += (lhs: inout Stride, rhs: Stride) { lhs = lhs + rhs }
            public static func -= (lhs: inout Stride, rhs: Stride) { lhs = lhs - rhs }

            public static func seconds(_ s: Int) -> Stride { 0 }
            public static func seconds(_ s: Double) -> Stride { 0 }
            public static func milliseconds(_ ms: Int) -> Stride { 0 }
            public static func microseconds(_ us: Int) -> Stride { 0 }
            public static func nanoseconds(_ ns: Int) -> Stride { 0 }
        }

        public func distance(to other: SchedulerTimeType) -> Stride { 0 }
        public func advanced(by n: Stride) -> SchedulerTimeType { self }
    }

    public typealias SchedulerOptions = Never

    /// The shared instance of the immediate scheduler.
    public static let shared = ImmediateScheduler()

    public var now: SchedulerTimeType { SchedulerTimeType() }

    public var minimumTolerance: SchedulerTimeType.Stride { 0 }

    public func schedule(options: Never?, _ action: @escaping () -> Void) {
        action()
    }

    public func schedule(
        after date: SchedulerTimeType,
        tolerance: SchedulerTimeType.Stride,
        options: Never?,
        _ action: @escaping () -> Void
    ) {
        action()
    }

    public func schedule(
        after date: SchedulerTimeType,
        interval: SchedulerTimeType.Stride,
        tolerance: SchedulerTimeType.Stride,
        options: Never?,
        _ action: @escaping () -> Void
    ) -> any Cancellable {
        action()
        return AnyCancellable {}
    }
}
