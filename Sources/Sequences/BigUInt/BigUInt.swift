/// An unsigned integer of any size, stored as limbs in base 10^18 so that decimal output is a copy.
///
/// The lowest limb lives inline and the others in an array that stays empty (and so unallocated)
/// for every value below 10^18. Limbs are little-endian: `low` is limb 0, `high[0]` limb 1, and the
/// last element of `high`, when there is one, is never zero. That canonical form makes the
/// synthesized `==` and `hash(into:)` exact.
///
/// Arithmetic never traps and never wraps: a sum or product that needs another limb gets one.
///
/// **Ownership:** a value type; copies share the limb array until one of them is mutated.
///
/// **Thread safety:** value type; not shared.
public struct BigUInt: Sendable, Hashable, Comparable, CustomStringConvertible, ExpressibleByIntegerLiteral {
    /// The base of one limb: each limb holds 18 decimal digits.
    static let limbBase: UInt64 = 1_000_000_000_000_000_000

    /// The number of decimal digits in one full limb.
    @inlinable static var digitsPerLimb: Int { 18 }

    /// Limb 0: the value modulo 10^18.
    @usableFromInline private(set) var low: UInt64

    /// Limbs 1 and up, least significant first; empty for values below 10^18, else its last limb is non-zero.
    @usableFromInline private(set) var high: [UInt64]

    /// Zero.
    public static let zero = BigUInt(0)

    /// Creates the value `value`.
    ///
    /// - Complexity: O(1); allocates only when `value` is at least 10^18.
    @inline(__always)
    public init(_ value: UInt64) {
        if value < Self.limbBase {
            low = value
            high = []
        } else {
            (low, high) = Self.twoLimbs(value)
        }
    }

    /// The slow path of ``init(_:)``, kept out of line so that the fast path inlines.
    @inline(never)
    private static func twoLimbs(_ value: UInt64) -> (UInt64, [UInt64]) {
        // UInt64.max / 10^18 is 18, so one more limb always suffices.
        (value % limbBase, [value / limbBase])
    }

    public init(integerLiteral value: UInt64) {
        self.init(value)
    }

    /// Whether the value is zero.
    ///
    /// - Complexity: O(1).
    public var isZero: Bool {
        low == 0 && high.isEmpty
    }

    /// The number of base-10^18 limbs, at least one.
    var limbCount: Int {
        1 + high.count
    }

    // MARK: Comparison

    /// - Complexity: O(*n*) in the number of limbs, O(1) when the limb counts differ.
    public static func < (lhs: BigUInt, rhs: BigUInt) -> Bool {
        if lhs.high.count != rhs.high.count {
            return lhs.high.count < rhs.high.count
        }
        var index = lhs.high.count - 1
        while index >= 0 {
            let left = lhs.high[index]
            let right = rhs.high[index]
            if left != right { return left < right }
            index -= 1
        }
        return lhs.low < rhs.low
    }

    // MARK: Addition

    /// Returns the sum of two values.
    ///
    /// - Complexity: O(*n*) in the number of limbs of the larger operand; O(1) and allocation-free when
    ///   both operands and the sum are below 10^18.
    public static func + (lhs: BigUInt, rhs: BigUInt) -> BigUInt {
        // Start from the longer operand so that the in-place add never has to grow before the carry.
        if lhs.high.count >= rhs.high.count {
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
        var sum = lhs.low &+ rhs.low
        var carry: UInt64 = 0
        if sum >= limbBase {
            sum &-= limbBase
            carry = 1
        }
        lhs.low = sum
        if rhs.high.isEmpty && (carry == 0 || lhs.high.isEmpty) {
            if carry != 0 { lhs.high.append(carry) }
            return
        }
        let shorter = rhs.high.count
        if lhs.high.count < shorter {
            lhs.high.append(contentsOf: repeatElement(0, count: shorter - lhs.high.count))
        }
        carry = lhs.high.withUnsafeMutableBufferPointer { limbs in
            rhs.high.withUnsafeBufferPointer { other in
                var carry = carry
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
        if carry != 0 { lhs.high.append(carry) }
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
        var carry: UInt64
        (lhs.low, carry) = multiplyLimb(lhs.low, by: rhs, adding: 0)
        if !lhs.high.isEmpty {
            carry = lhs.high.withUnsafeMutableBufferPointer { limbs in
                var carry = carry
                for index in limbs.indices {
                    (limbs[index], carry) = multiplyLimb(limbs[index], by: rhs, adding: carry)
                }
                return carry
            }
        }
        // The carry is below 2^64 < 19 * 10^18: at most two more limbs.
        if carry != 0 {
            lhs.high.append(carry % limbBase)
            let top = carry / limbBase
            if top != 0 { lhs.high.append(top) }
        }
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
