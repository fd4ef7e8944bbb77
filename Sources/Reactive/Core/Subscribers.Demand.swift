extension Subscribers {
    /// A requested number of items, sent to a publisher by a subscriber through its subscription.
    ///
    /// A demand is either a finite count (``max(_:)``, with ``none`` for zero) or ``unlimited``.
    /// Arithmetic saturates exactly as Combine's does: anything added to `.unlimited` stays
    /// `.unlimited`; a finite sum that overflows `Int.max` becomes `.unlimited`; subtraction
    /// never goes below `.none`, and subtracting `.unlimited` from a finite demand gives `.none`.
    ///
    /// **Thread safety:** value type; not shared.
    @frozen
    public struct Demand: Equatable, Comparable, Hashable, Codable, CustomStringConvertible, Sendable {
        /// The count; `unlimitedRawValue` stands for unlimited. Finite counts never exceed `Int.max`.
        @usableFromInline
        internal let rawValue: UInt

        @inlinable
        internal static var unlimitedRawValue: UInt { UInt(Int.max) &+ 1 }

        @inlinable
        internal init(rawValue: UInt) {
            self.rawValue = min(rawValue, Self.unlimitedRawValue)
        }

        /// For a raw value already known to be at most `unlimitedRawValue`: skips the clamp, which
        /// would otherwise sit on the dependency chain of a demand counted down value by value.
        @inlinable
        internal init(uncheckedRawValue: UInt) {
            self.rawValue = uncheckedRawValue
        }

        /// A request for as many values as the publisher can produce.
        // Computed and inlinable rather than a `static let`: a stored global costs a call to its
        // lazy accessor at every use from another module.
        @inlinable
        public static var unlimited: Demand { Demand(rawValue: unlimitedRawValue) }

        /// A request for no elements from the publisher.
        @inlinable
        public static var none: Demand { Demand(rawValue: 0) }

        /// Creates a demand for the given maximum number of elements.
        ///
        /// - Parameter value: The number of elements; must not be negative.
        /// > Warning: A negative value is misuse of the API and traps.
        @inlinable
        public static func max(_ value: Int) -> Demand {
            precondition(value >= 0, "API violation: a demand must not be negative, got \(value)")
            return Demand(rawValue: UInt(value))
        }

        /// The number of requested values, or `nil` if unlimited.
        @inlinable
        public var max: Int? {
            rawValue == Self.unlimitedRawValue ? nil : Int(rawValue)
        }

        public var description: String {
            self == .unlimited ? "unlimited" : "max(\(rawValue))"
        }

        // MARK: Arithmetic

        /// Adds two demands; `.unlimited` absorbs and an overflowing sum becomes `.unlimited`.
        @inlinable
        public static func + (lhs: Demand, rhs: Demand) -> Demand {
            // Each raw value is at most `unlimitedRawValue` (2^63): the sum of two finite demands
            // cannot overflow, one with `.unlimited` is at least 2^63, and only two `.unlimited`s
            // overflow. Clamped without branches.
            let (sum, overflow) = lhs.rawValue.addingReportingOverflow(rhs.rawValue)
            return Demand(uncheckedRawValue: overflow ? unlimitedRawValue : Swift.min(sum, unlimitedRawValue))
        }

        /// Adds an integer to a demand; a negative integer subtracts.
        @inlinable
        public static func + (lhs: Demand, rhs: Int) -> Demand {
            if lhs == .unlimited { return .unlimited }
            return rhs < 0 ? lhs - Demand(rawValue: rhs.magnitude) : lhs + Demand(rawValue: UInt(rhs))
        }

        /// Subtracts one demand from another; never goes below `.none`.
        @inlinable
        public static func - (lhs: Demand, rhs: Demand) -> Demand {
            if lhs.rawValue == unlimitedRawValue { return .unlimited }
            if rhs.rawValue == unlimitedRawValue { return .none }
            let (difference, borrowed) = lhs.rawValue.subtractingReportingOverflow(rhs.rawValue)
            return Demand(uncheckedRawValue: borrowed ? 0 : difference)
        }

        /// Subtracts an integer from a demand; a negative integer adds.
        @inlinable
        public static func - (lhs: Demand, rhs: Int) -> Demand {
            if lhs == .unlimited { return .unlimited }
            return rhs < 0 ? lhs + Demand(rawValue: rhs.magnitude) : lhs - Demand(rawValue: UInt(rhs))
        }

        /// Multiplies a demand by an integer; `.unlimited` absorbs and overflow becomes `.unlimited`.
        ///
        /// > Warning: A negative factor is misuse of the API and traps.
        @inlinable
        public static func * (lhs: Demand, rhs: Int) -> Demand {
            precondition(rhs >= 0, "API violation: a demand must not be multiplied by a negative number")
            if lhs == .unlimited { return .unlimited }
            let (product, overflow) = lhs.rawValue.multipliedReportingOverflow(by: UInt(rhs))
            return overflow ? .unlimited : Demand(rawValue: product)
        }

        @inlinable
        public static func += (lhs: inout Demand, rhs: Demand) { lhs = lhs + rhs }

        @inlinable
        public static func += (lhs: inout Demand, rhs: Int) { lhs = lhs + rhs }

        @inlinable
        public static func -= (lhs: inout Demand, rhs: Demand) { lhs = lhs - rhs }

        @inlinable
        public static func -= (lhs: inout Demand, rhs: Int) { lhs = lhs - rhs }

        @inlinable
        public static func *= (lhs: inout Demand, rhs: Int) { lhs = lhs * rhs }

        // MARK: Comparison

        @inlinable
        public static func < (lhs: Demand, rhs: Demand) -> Bool {
            lhs.rawValue < rhs.rawValue
        }

        @inlinable
        public static func == (lhs: Demand, rhs: Int) -> Bool {
            rhs >= 0 && lhs.rawValue == UInt(rhs)
        }

        @inlinable
        public static func != (lhs: Demand, rhs: Int) -> Bool { !(lhs == rhs) }

        @inlinable
        public static func == (lhs: Int, rhs: Demand) -> Bool { rhs == lhs }

        @inlinable
        public static func != (lhs: Int, rhs: Demand) -> Bool { !(rhs == lhs) }

        @inlinable
        public static func < (lhs: Demand, rhs: Int) -> Bool {
            rhs > 0 && lhs.rawValue < UInt(rhs)
        }

        @inlinable
        public static func > (lhs: Demand, rhs: Int) -> Bool {
            rhs < 0 || lhs.rawValue > UInt(rhs)
        }

        @inlinable
        public static func <= (lhs: Demand, rhs: Int) -> Bool { !(lhs > rhs) }

        @inlinable
        public static func >= (lhs: Demand, rhs: Int) -> Bool { !(lhs < rhs) }

        @inlinable
        public static func < (lhs: Int, rhs: Demand) -> Bool { rhs > lhs }

        @inlinable
        public static func > (lhs: Int, rhs: Demand) -> Bool { rhs < lhs }

        @inlinable
        public static func <= (lhs: Int, rhs: Demand) -> Bool { rhs >= lhs }

        @inlinable
        public static func >= (lhs: Int, rhs: Demand) -> Bool { rhs <= lhs }

        // MARK: Codable

        public init(from decoder: any Decoder) throws {
            self.init(rawValue: try decoder.singleValueContainer().decode(UInt.self))
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(rawValue)
        }
    }
}
