/// An unsigned integer of any size, stored as limbs in base 10^18 so that decimal output is a copy.
///
/// A value below 10^18 is one machine word held inline, with no array at all: copying or destroying it
/// is a plain copy, with no reference count to update. Larger values keep all their limbs in an array,
/// little-endian, at least two of them and the last never zero. That canonical form (one representation
/// per value) makes the synthesized `==` and `hash(into:)` exact.
///
/// Arithmetic never traps and never wraps: a sum or product that needs another limb gets one.
///
/// **Ownership:** a value type; copies of a large value share its limb array until one of them is mutated.
///
/// **Thread safety:** value type; not shared.
public struct BigUInt: Sendable, Hashable, Comparable, CustomStringConvertible, ExpressibleByIntegerLiteral {
    /// How a value is held.
    @usableFromInline
    enum Storage: Sendable, Hashable {
        /// A value below 10^18: the only limb, inline.
        case small(UInt64)
        /// A value of 10^18 or more: two or more limbs, least significant first, the last non-zero.
        case large([UInt64])
    }

    /// The base of one limb: each limb holds 18 decimal digits.
    static let limbBase: UInt64 = 1_000_000_000_000_000_000

    /// The number of decimal digits in one full limb.
    @inlinable static var digitsPerLimb: Int { 18 }

    /// The value, in canonical form: `.small` exactly when it is below 10^18.
    @usableFromInline private(set) var storage: Storage

    /// Zero.
    public static let zero = BigUInt(0)

    /// Creates the value `value`.
    ///
    /// - Complexity: O(1); allocates only when `value` is at least 10^18.
    @inlinable @inline(__always)
    public init(_ value: UInt64) {
        // UInt64.max / 10^18 is 18, so at most one more limb.
        storage = value < 1_000_000_000_000_000_000 ? .small(value) : Self.twoLimbs(value)
    }

    /// The slow path of ``init(_:)``, kept out of line so that the fast path inlines.
    @usableFromInline @inline(never)
    static func twoLimbs(_ value: UInt64) -> Storage {
        .large([value % limbBase, value / limbBase])
    }

    public init(integerLiteral value: UInt64) {
        self.init(value)
    }

    /// Whether the value is zero.
    ///
    /// - Complexity: O(1).
    public var isZero: Bool {
        storage == .small(0)
    }

    /// The number of base-10^18 limbs, at least one.
    var limbCount: Int {
        switch storage {
        case .small: 1
        case .large(let limbs): limbs.count
        }
    }

    /// Limb 0: the value modulo 10^18.
    var low: UInt64 {
        switch storage {
        case .small(let value): value
        case .large(let limbs): limbs[0]
        }
    }

    /// Every limb, least significant first, moved out of `self` (left zero) so that it stays uniquely referenced.
    private mutating func takeLimbs() -> [UInt64] {
        switch storage {
        case .small(let value):
            return [value]
        case .large(let limbs):
            storage = .small(0)
            // `limbs` now holds the only reference that `self` had.
            return limbs
        }
    }

    /// Stores limbs produced by arithmetic, normalized: no zero limbs on top, one limb inline.
    private mutating func setLimbs(_ limbs: consuming [UInt64]) {
        while limbs.count > 1 && limbs[limbs.count - 1] == 0 {
            limbs.removeLast()
        }
        storage = limbs.count == 1 ? .small(limbs[0]) : .large(limbs)
    }

    /// Calls `body` with every limb, least significant first, without copying them.
    private func withLimbs<Result>(_ body: (UnsafeBufferPointer<UInt64>) -> Result) -> Result {
        switch storage {
        case .small(var value):
            return withUnsafePointer(to: &value) { body(UnsafeBufferPointer(start: $0, count: 1)) }
        case .large(let limbs):
            return limbs.withUnsafeBufferPointer(body)
        }
    }

    // MARK: Comparison

    /// - Complexity: O(*n*) in the number of limbs, O(1) when the limb counts differ.
    public static func < (lhs: BigUInt, rhs: BigUInt) -> Bool {
        if case .small(let left) = lhs.storage, case .small(let right) = rhs.storage {
            return left < right
        }
        if lhs.limbCount != rhs.limbCount {
            return lhs.limbCount < rhs.limbCount
        }
        return lhs.withLimbs { left in
            rhs.withLimbs { right in
                var index = left.count - 1
                while index >= 0 {
                    if left[index] != right[index] { return left[index] < right[index] }
                    index -= 1
                }
                return false
            }
        }
    }

    // MARK: Addition

    /// Returns the sum of two values.
    ///
    /// - Complexity: O(*n*) in the number of limbs of the larger operand; O(1) and allocation-free when
    ///   both operands and the sum are below 10^18.
    public static func + (lhs: BigUInt, rhs: BigUInt) -> BigUInt {
        // Start from the longer operand so that the in-place add never has to grow before the carry.
        if lhs.limbCount >= rhs.limbCount {
            var sum = lhs
            sum += rhs
            return sum
        } else {
            var sum = rhs
            sum += lhs
            return sum
        }
    }

    /// Adds `rhs` to `lhs` in place.
    ///
    /// When `lhs` holds the only reference to its limbs they are updated without allocating, unless the
    /// sum needs one more limb than either operand.
    ///
    /// - Complexity: O(*n*) in the number of limbs of the larger operand.
    public static func += (lhs: inout BigUInt, rhs: BigUInt) {
        // Each limb is below 10^18, so limb + limb + carry < 2 * 10^18 + 1 < 2^64: no addition here can wrap.
        if case .small(let left) = lhs.storage, case .small(let right) = rhs.storage {
            let sum = left &+ right
            lhs.storage = sum < limbBase ? .small(sum) : .large([sum &- limbBase, 1])
            return
        }
        var limbs = lhs.takeLimbs()
        let shorter = rhs.limbCount
        if limbs.count < shorter {
            limbs.append(contentsOf: repeatElement(0, count: shorter - limbs.count))
        }
        let carry = limbs.withUnsafeMutableBufferPointer { limbs in
            rhs.withLimbs { other in
                var carry: UInt64 = 0
                for index in 0..<shorter {
                    var limb = limbs[index] &+ other[index] &+ carry
                    carry = 0
                    if limb >= limbBase {
                        limb &-= limbBase
                        carry = 1
                    }
                    limbs[index] = limb
                }
                var index = shorter
                while carry != 0 && index < limbs.count {
                    let limb = limbs[index] &+ 1
                    if limb == limbBase {
                        limbs[index] = 0
                    } else {
                        limbs[index] = limb
                        carry = 0
                    }
                    index += 1
                }
                return carry
            }
        }
        if carry != 0 { limbs.append(carry) }
        lhs.setLimbs(limbs)
    }

    // MARK: Multiplication by a machine word

    /// Returns the product of a value and a machine word.
    ///
    /// - Complexity: O(*n*) in the number of limbs.
    public static func * (lhs: BigUInt, rhs: UInt64) -> BigUInt {
        var product = lhs
        product *= rhs
        return product
    }

    /// Multiplies `lhs` by a machine word in place.
    ///
    /// Each limb is multiplied to a full 128-bit product (`multipliedFullWidth`) and divided by 10^18,
    /// so nothing can overflow: the product grows by at most two limbs.
    ///
    /// - Complexity: O(*n*) in the number of limbs; allocation-free while the product stays below 10^18
    ///   and, for a uniquely referenced value, unless the product needs more limbs.
    public static func *= (lhs: inout BigUInt, rhs: UInt64) {
        if rhs == 0 {
            lhs = .zero
            return
        }
        if case .small(let value) = lhs.storage {
            let (limb, carry) = multiplyLimb(value, by: rhs, adding: 0)
            if carry == 0 {
                lhs.storage = .small(limb)
            } else {
                // The carry is below 2^64 < 19 * 10^18: at most two more limbs.
                let top = carry / limbBase
                lhs.storage = .large(top == 0 ? [limb, carry] : [limb, carry % limbBase, top])
            }
            return
        }
        var limbs = lhs.takeLimbs()
        let carry = limbs.withUnsafeMutableBufferPointer { limbs in
            var carry: UInt64 = 0
            for index in limbs.indices {
                (limbs[index], carry) = multiplyLimb(limbs[index], by: rhs, adding: carry)
            }
            return carry
        }
        // The carry is below 2^64 < 19 * 10^18: at most two more limbs.
        if carry != 0 {
            limbs.append(carry % limbBase)
            let top = carry / limbBase
            if top != 0 { limbs.append(top) }
        }
        lhs.setLimbs(limbs)
    }

    /// Computes `limb * factor + carry` as a new limb (the remainder modulo 10^18) and the carry out.
    ///
    /// With `limb < 10^18` and `carry < 2^64` the exact result is below 10^18 * 2^64, so the high word
    /// stays below 10^18 (the full-width division cannot overflow) and the carry out fits in 64 bits.
    @inline(__always)
    private static func multiplyLimb(_ limb: UInt64, by factor: UInt64, adding carry: UInt64) -> (UInt64, UInt64) {
        let product = limb.multipliedFullWidth(by: factor)
        let (lowWord, overflow) = product.low.addingReportingOverflow(carry)
        let highWord = product.high &+ (overflow ? 1 : 0)
        if highWord == 0 && lowWord < limbBase {
            return (lowWord, 0)
        }
        let (quotient, remainder) = limbBase.dividingFullWidth((highWord, lowWord))
        return (remainder, quotient)
    }
}
