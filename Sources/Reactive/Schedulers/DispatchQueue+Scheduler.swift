import Dispatch

extension DispatchQueue: Scheduler {
    /// The scheduler time type used by the dispatch queue: a `DispatchTime`.
    ///
    /// **Thread safety:** value type; not shared.
    public struct SchedulerTimeType: Strideable, Codable, Hashable, Sendable {
        /// The dispatch time represented by this type.
        public var dispatchTime: DispatchTime

        /// Creates a dispatch queue time type instance.
        public init(_ time: DispatchTime) {
            dispatchTime = time
        }

        /// Returns the distance to another dispatch queue time.
        public func distance(to other: SchedulerTimeType) -> Stride {
            let start = dispatchTime.uptimeNanoseconds
            let end = other.dispatchTime.uptimeNanoseconds
            let (difference, overflow) = Int(truncatingIfNeeded: end).subtractingReportingOverflow(
                Int(truncatingIfNeeded: start)
            )
            if overflow || end > UInt64(Int.max) || start > UInt64(Int.max) {
                return .nanoseconds(end >= start ? Int.max : Int.min)
            }
            return .nanoseconds(difference)
        }

        /// Returns a dispatch queue scheduler time calculated by advancing this instance's time by the given interval.
        public func advanced(by n: Stride) -> SchedulerTimeType {
            let start = dispatchTime.uptimeNanoseconds
            let moved: UInt64
            if n.magnitude >= 0 {
                let (sum, overflow) = start.addingReportingOverflow(UInt64(n.magnitude))
                moved = overflow ? UInt64.max : sum
            } else {
                let back = n.magnitude.magnitude
                // Uptime zero means "now" to Dispatch, so an instant in the past stops at one nanosecond.
                moved = start > UInt64(back) ? start - UInt64(back) : 1
            }
            return SchedulerTimeType(DispatchTime(uptimeNanoseconds: moved))
        }

        public static func == (lhs: SchedulerTimeType, rhs: SchedulerTimeType) -> Bool {
            lhs.dispatchTime.uptimeNanoseconds == rhs.dispatchTime.uptimeNanoseconds
        }

        public func hash(into hasher: inout Hasher) {
            hasher.combine(dispatchTime.uptimeNanoseconds)
        }

        public init(from decoder: any Decoder) throws {
            let nanoseconds = try decoder.singleValueContainer().decode(UInt64.self)
            dispatchTime = DispatchTime(uptimeNanoseconds: nanoseconds)
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(dispatchTime.uptimeNanoseconds)
        }

        /// A type that represents the distance between two values, in nanoseconds.
        ///
        /// Integer and floating-point literals are seconds, as in Combine.
        ///
        /// **Thread safety:** value type; not shared.
        public struct Stride: SchedulerTimeIntervalConvertible, Comparable, SignedNumeric, ExpressibleByFloatLiteral,
            Hashable, Codable, Sendable
        {
            public typealias FloatLiteralType = Double
            public typealias IntegerLiteralType = Int
            public typealias Magnitude = Int

            /// The value of this time interval in nanoseconds.
            public var magnitude: Int

            /// A `DispatchTimeInterval` created with the value of this type in nanoseconds.
            public var timeInterval: DispatchTimeInterval {
                .nanoseconds(magnitude)
            }

            /// Creates a dispatch queue time interval from a dispatch time interval value.
            public init(_ timeInterval: DispatchTimeInterval) {
                switch timeInterval {
                case .seconds(let s): magnitude = Self.scaled(s, by: 1_000_000_000)
                case .milliseconds(let ms): magnitude = Self.scaled(ms, by: 1_000_000)
                case .microseconds(let us): magnitude = Self.scaled(us, by: 1_000)
                case .nanoseconds(let ns): magnitude = ns
                case .never: magnitude = .max
                @unknown default: magnitude = .max
                }
            }

            private init(nanoseconds: Int) {
                magnitude = nanoseconds
            }

            /// Creates a dispatch queue time interval from a floating-point seconds value.
            public init(floatLiteral value: Double) {
                magnitude = Self.nanoseconds(fromSeconds: value)
            }

            /// Creates a dispatch queue time interval from an integer seconds value.
            public init(integerLiteral value: Int) {
                magnitude = Self.scaled(value, by: 1_000_000_000)
            }

            /// Creates a dispatch queue time interval from a binary integer seconds value, if it fits.
            public init?<T: BinaryInteger>(exactly source: T) {
                guard let value = Int(exactly: source) else { return nil }
                self.init(integerLiteral: value)
            }

            public static func < (lhs: Stride, rhs: Stride) -> Bool { lhs.magnitude < rhs.magnitude }

            public static func * (lhs: Stride, rhs: Stride) -> Stride {
                let (product, overflow) = lhs.magnitude.multipliedReportingOverflow(by: rhs.magnitude)
                let positive = (lhs.magnitude < 0) == (rhs.magnitude < 0)
                return Stride(nanoseconds: overflow ? (positive ? .max : .min) : product)
            }

            public static func + (lhs: Stride, rhs: Stride) -> Stride {
                let (sum, overflow) = lhs.magnitude.addingReportingOverflow(rhs.magnitude)
                return Stride(nanoseconds: overflow ? (rhs.magnitude > 0 ? .max : .min) : sum)
            }

            public static func - (lhs: Stride, rhs: Stride) -> Stride {
                let (difference, overflow) = lhs.magnitude.subtractingReportingOverflow(rhs.magnitude)
                return Stride(nanoseconds: overflow ? (rhs.magnitude < 0 ? .max : .min) : difference)
            }

            public static func *= (lhs: inout Stride, rhs: Stride) { lhs = lhs * rhs }

            public static func += (lhs: inout Stride, rhs: Stride) { lhs = lhs + rhs }

            public static func -= (lhs: inout Stride, rhs: Stride) { lhs = lhs - rhs }

            public static func seconds(_ s: Int) -> Stride { Stride(.seconds(s)) }

            public static func seconds(_ s: Double) -> Stride { Stride(nanoseconds: nanoseconds(fromSeconds: s)) }

            public static func milliseconds(_ ms: Int) -> Stride { Stride(.milliseconds(ms)) }

            public static func microseconds(_ us: Int) -> Stride { Stride(.microseconds(us)) }

            public static func nanoseconds(_ ns: Int) -> Stride { Stride(.nanoseconds(ns)) }

            private static func scaled(_ value: Int, by factor: Int) -> Int {
                let (product, overflow) = value.multipliedReportingOverflow(by: factor)
                return overflow ? (value > 0 ? .max : .min) : product
            }

            private static func nanoseconds(fromSeconds seconds: Double) -> Int {
                let ns = (seconds * 1e9).rounded()
                if ns.isNaN { return 0 }
                if ns >= Double(Int.max) { return .max }
                if ns <= Double(Int.min) { return .min }
                return Int(ns)
            }
        }
    }

    /// Options that affect the operation of the dispatch queue scheduler.
    ///
    /// **Thread safety:** value type; not shared.
    public struct SchedulerOptions: @unchecked Sendable {
        // Audited: no lock needed because it is an immutable-when-shared value; its flags are a plain
        // integer option set that Dispatch on Linux does not mark Sendable, and DispatchGroup is thread-safe.

        /// The dispatch queue quality of service.
        public var qos: DispatchQoS

        /// The dispatch queue work item flags.
        public var flags: DispatchWorkItemFlags

        /// The dispatch group, if any, that should be used for performing actions.
        public var group: DispatchGroup?

        /// Creates dispatch queue scheduler options.
        public init(qos: DispatchQoS = .unspecified, flags: DispatchWorkItemFlags = [], group: DispatchGroup? = nil) {
            self.qos = qos
            self.flags = flags
            self.group = group
        }
    }

    /// This scheduler's definition of the current moment in time.
    public var now: SchedulerTimeType {
        SchedulerTimeType(.now())
    }

    /// The minimum tolerance allowed by the scheduler: zero.
    public var minimumTolerance: SchedulerTimeType.Stride {
        SchedulerTimeType.Stride(.nanoseconds(0))
    }

    /// Performs the action on this queue at the next possible opportunity.
    public func schedule(options: SchedulerOptions?, _ action: @escaping () -> Void) {
        let work = ScheduledAction(action)
        let options = options ?? SchedulerOptions()
        if let group = options.group {
            async(group: group, qos: options.qos, flags: options.flags) { work.run() }
        } else {
            async(qos: options.qos, flags: options.flags) { work.run() }
        }
    }

    /// Performs the action on this queue at some time after the specified date.
    public func schedule(
        after date: SchedulerTimeType,
        tolerance: SchedulerTimeType.Stride,
        options: SchedulerOptions?,
        _ action: @escaping () -> Void
    ) {
        let work = ScheduledAction(action)
        let options = options ?? SchedulerOptions()
        asyncAfter(deadline: date.dispatchTime, qos: options.qos, flags: options.flags) { work.run() }
    }

    /// Performs the action on this queue after the specified date, then at the given interval,
    /// until the returned cancellable is cancelled or deinitialized.
    public func schedule(
        after date: SchedulerTimeType,
        interval: SchedulerTimeType.Stride,
        tolerance: SchedulerTimeType.Stride,
        options: SchedulerOptions?,
        _ action: @escaping () -> Void
    ) -> any Cancellable {
        let work = ScheduledAction(action)
        let timer = DispatchSource.makeTimerSource(queue: self)
        // A non-positive interval would fire continuously; one nanosecond is the floor.
        let repeating = DispatchTimeInterval.nanoseconds(Swift.max(1, interval.magnitude))
        let leeway = DispatchTimeInterval.nanoseconds(Swift.max(0, tolerance.magnitude))
        timer.schedule(deadline: date.dispatchTime, repeating: repeating, leeway: leeway)
        timer.setEventHandler { work.run() }
        timer.activate()
        return AnyCancellable { timer.cancel() }
    }
}

/// A scheduler action handed to Dispatch or to a Foundation `Timer`, which want `@Sendable` closures.
///
/// Audited: `@unchecked Sendable` is sound because the action is never run concurrently with
/// itself: a one-shot action runs once, on the target queue (or run loop), and a repeating one
/// runs on its timer source's queue (or its run loop's thread), which delivers one event at a
/// time. Whatever state the action touches is the scheduling operator's, and the operators
/// guarantee that they use it serially (each guards its shared state with its own lock).
internal struct ScheduledAction: @unchecked Sendable {
    let run: () -> Void

    init(_ run: @escaping () -> Void) {
        self.run = run
    }
}
