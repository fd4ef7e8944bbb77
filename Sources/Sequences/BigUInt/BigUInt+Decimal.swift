import Reactive

extension BigUInt {
    /// The decimal form, without leading zeros ("0" for zero).
    ///
    /// - Complexity: O(*n*) in the number of digits.
    public var description: String {
        String(unsafeUninitializedCapacity: decimalDigitCount) { buffer in
            writeDecimal(into: UnsafeMutableRawBufferPointer(buffer))
        }
    }

    /// The number of digits in the decimal form: 1 for zero, else the digits without leading zeros.
    ///
    /// - Complexity: O(1).
    @inlinable
    public var decimalDigitCount: Int {
        switch storage {
        case .small(let value):
            return Self.decimalDigitCount(of: value)
        case .large(let limbs):
            // The array's byte size bounds its count far below Int.max / 18, so this cannot overflow.
            return Self.decimalDigitCount(of: limbs[limbs.count - 1]) + (limbs.count - 1) * Self.digitsPerLimb
        }
    }

    /// Writes the decimal form as ASCII digits at the start of `buffer`, with no terminator.
    ///
    /// Size the buffer with ``decimalDigitCount``; bytes past the digits are left untouched.
    ///
    /// > Warning: A buffer shorter than ``decimalDigitCount`` is misuse of the API and traps.
    ///
    /// - Parameter buffer: Where the digits go; at least ``decimalDigitCount`` bytes.
    /// - Returns: The number of bytes written, which is ``decimalDigitCount``.
    /// - Complexity: O(*n*) in the number of digits; no allocation.
    @inlinable @inline(__always) @discardableResult
    public func writeDecimal(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        // Inlined for the one-limb case (every value below 10^18): the streams' hot path.
        if case .small(let value) = storage, let start = buffer.baseAddress {
            let count = Self.decimalDigitCount(of: value)
            if count <= buffer.count {
                Self.writeDigits(of: value, count: count, to: start)
                return count
            }
        }
        return writeDecimalLimbs(into: buffer)
    }

    /// ``writeDecimal(into:)`` for any number of limbs, and its misuse check.
    @usableFromInline
    func writeDecimalLimbs(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        let count = decimalDigitCount
        guard count <= buffer.count, let start = buffer.baseAddress else {
            apiViolation("writeDecimal needs \(count) bytes, the buffer has \(buffer.count)")
        }
        switch storage {
        case .small(let value):
            Self.writeDigits(of: value, count: count, to: start)
        case .large(let limbs):
            // The top limb without leading zeros, then every lower limb padded to a full 18 digits.
            let topDigits = count - (limbs.count - 1) * Self.digitsPerLimb
            limbs.withUnsafeBufferPointer { limbs in
                Self.writeDigits(of: limbs[limbs.count - 1], count: topDigits, to: start)
                var offset = topDigits
                var index = limbs.count - 2
                while index >= 0 {
                    Self.writeDigits(of: limbs[index], count: Self.digitsPerLimb, to: start + offset)
                    offset += Self.digitsPerLimb
                    index -= 1
                }
            }
        }
        return count
    }

    /// Appends the decimal form as ASCII digits to `bytes`.
    ///
    /// - Complexity: O(*n*) in the number of digits, plus amortized growth of `bytes`.
    public func appendDecimal(to bytes: inout [UInt8]) {
        let count = decimalDigitCount
        let offset = bytes.count
        bytes.append(contentsOf: repeatElement(0, count: count))
        bytes.withUnsafeMutableBytes { raw in
            _ = writeDecimal(into: UnsafeMutableRawBufferPointer(rebasing: raw[offset...]))
        }
    }

    /// The number of decimal digits of `value`, 1 for zero.
    public static func decimalDigitCount(_ value: UInt64) -> Int {
        decimalDigitCount(of: value)
    }

    /// The value as a machine word, or `nil` when it needs more than one limb (it is 10^18 or more).
    ///
    /// For callers that format the common small values without touching the limb array.
    /// - Complexity: O(1).
    @inlinable
    public var smallValue: UInt64? {
        if case .small(let value) = storage { value } else { nil }
    }

    /// Writes `value` in decimal at `destination` (at most 20 bytes), with no terminator.
    ///
    /// For formatting machine words (indices) beside big values without making a ``BigUInt``.
    /// - Returns: The number of digits written.
    @inlinable @inline(__always) @discardableResult
    public static func writeDecimal(_ value: UInt64, to destination: UnsafeMutableRawPointer) -> Int {
        let count = decimalDigitCount(of: value)
        writeDigits(of: value, count: count, to: destination)
        return count
    }

    // MARK: Digit helpers

    /// The number of decimal digits of a machine word, 1 for zero.
    @inlinable @inline(__always)
    static func decimalDigitCount(of value: UInt64) -> Int {
        // floor(bits * log10(2)) is the digit count or one less; one comparison with a power of ten decides.
        // Setting the lowest bit changes no comparison with 10^k for k > 0 and makes zero count as one digit.
        let odd = value | 1
        let bits = UInt64.bitWidth - odd.leadingZeroBitCount
        let guess = (bits &* 1233) &>> 12
        return guess &+ (odd >= powerOfTen(guess) ? 1 : 0)
    }

    /// 10^exponent for exponents 0 through 19 (the powers a `UInt64` holds).
    @inlinable @inline(__always)
    static func powerOfTen(_ exponent: Int) -> UInt64 {
        // A table lookup: a `switch` here compiles to an indirect jump per call.
        powersOfTen[exponent]
    }

    /// 10^0 through 10^19; a constant, statically initialized.
    @usableFromInline static let powersOfTen: InlineArray<20, UInt64> = [
        1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000, 1_000_000_000,
        10_000_000_000, 100_000_000_000, 1_000_000_000_000, 10_000_000_000_000, 100_000_000_000_000,
        1_000_000_000_000_000, 10_000_000_000_000_000, 100_000_000_000_000_000, 1_000_000_000_000_000_000,
        10_000_000_000_000_000_000,
    ]

    /// The two-digit ASCII pairs "00" through "99", back to back.
    ///
    /// A computed `StaticString` is a pointer into constant data: no lazy global, no allocation.
    @inlinable static var digitPairs: StaticString {
        """
        00010203040506070809101112131415161718192021222324252627282930313233343536373839\
        40414243444546474849505152535455565758596061626364656667686970717273747576777879\
        8081828384858687888990919293949596979899
        """
    }

    /// Writes exactly `count` digits of `value` (zero-padded on the left) at `destination`.
    ///
    /// Eight digits at a time from the right: one 64-bit division by 10^8, then two independent 32-bit
    /// splits into pairs, so the divisions overlap instead of forming one long chain of `/ 100`.
    @inlinable @inline(__always)
    static func writeDigits(of value: UInt64, count: Int, to destination: UnsafeMutableRawPointer) {
        var remaining = value
        var end = count
        while end >= 8 {
            let quotient = remaining / 100_000_000
            let chunk = UInt32(truncatingIfNeeded: remaining &- quotient &* 100_000_000)
            remaining = quotient
            end &-= 8
            let upper = chunk / 10_000
            writeFourDigits(upper, to: destination + end)
            writeFourDigits(chunk &- upper &* 10_000, to: destination + (end &+ 4))
        }
        // Fewer than eight digits are left, so `remaining` is below 10^8 and fits in 32 bits.
        var rest = UInt32(truncatingIfNeeded: remaining)
        if end >= 4 {
            let quotient = rest / 10_000
            end &-= 4
            writeFourDigits(rest &- quotient &* 10_000, to: destination + end)
            rest = quotient
        }
        if end >= 2 {
            let quotient = rest / 100
            end &-= 2
            writePair(rest &- quotient &* 100, to: destination + end)
            rest = quotient
        }
        if end == 1 {
            destination.storeBytes(of: UInt8(truncatingIfNeeded: rest) &+ UInt8(ascii: "0"), as: UInt8.self)
        }
    }

    /// Writes the four digits of `value` (below 10^4, zero-padded).
    @inlinable @inline(__always)
    static func writeFourDigits(_ value: UInt32, to destination: UnsafeMutableRawPointer) {
        let upper = value / 100
        writePair(upper, to: destination)
        writePair(value &- upper &* 100, to: destination + 2)
    }

    /// Writes the two digits of `value` (below 100, zero-padded) with one 16-bit load and store.
    @inlinable @inline(__always)
    static func writePair(_ value: UInt32, to destination: UnsafeMutableRawPointer) {
        let pair = UnsafeRawPointer(digitPairs.utf8Start).loadUnaligned(
            fromByteOffset: Int(truncatingIfNeeded: value) &* 2,
            as: UInt16.self
        )
        destination.storeBytes(of: pair, as: UInt16.self)
    }
}
