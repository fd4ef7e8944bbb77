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
    public var decimalDigitCount: Int {
        guard let top = high.last else {
            return Self.decimalDigitCount(of: low)
        }
        // The array's byte size bounds its count far below Int.max / 18, so this cannot overflow.
        return Self.decimalDigitCount(of: top) + high.count * Self.digitsPerLimb
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
    @discardableResult
    public func writeDecimal(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        let count = decimalDigitCount
        guard count <= buffer.count, let start = buffer.baseAddress else {
            apiViolation("writeDecimal needs \(count) bytes, the buffer has \(buffer.count)")
        }
        guard let top = high.last else {
            Self.writeDigits(of: low, count: count, to: start)
            return count
        }
        // The top limb without leading zeros, then every lower limb padded to a full 18 digits.
        let topDigits = count - high.count * Self.digitsPerLimb
        Self.writeDigits(of: top, count: topDigits, to: start)
        var offset = topDigits
        high.withUnsafeBufferPointer { limbs in
            var index = limbs.count - 2
            while index >= 0 {
                Self.writeDigits(of: limbs[index], count: Self.digitsPerLimb, to: start + offset)
                offset += Self.digitsPerLimb
                index -= 1
            }
        }
        Self.writeDigits(of: low, count: Self.digitsPerLimb, to: start + offset)
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

    // MARK: Digit helpers

    /// The number of decimal digits of a machine word, 1 for zero.
    @inline(__always)
    static func decimalDigitCount(of value: UInt64) -> Int {
        // floor(bits * log10(2)) is the digit count or one less; one comparison with a power of ten decides.
        // Setting the lowest bit changes no comparison with 10^k for k > 0 and makes zero count as one digit.
        let odd = value | 1
        let bits = UInt64.bitWidth - odd.leadingZeroBitCount
        let guess = (bits &* 1233) &>> 12
        return guess &+ (odd >= powerOfTen(guess) ? 1 : 0)
    }

    /// 10^exponent for exponents 0 through 19 (the powers a `UInt64` holds).
    @inline(__always)
    private static func powerOfTen(_ exponent: Int) -> UInt64 {
        switch exponent {
        case 0: 1
        case 1: 10
        case 2: 100
        case 3: 1_000
        case 4: 10_000
        case 5: 100_000
        case 6: 1_000_000
        case 7: 10_000_000
        case 8: 100_000_000
        case 9: 1_000_000_000
        case 10: 10_000_000_000
        case 11: 100_000_000_000
        case 12: 1_000_000_000_000
        case 13: 10_000_000_000_000
        case 14: 100_000_000_000_000
        case 15: 1_000_000_000_000_000
        case 16: 10_000_000_000_000_000
        case 17: 100_000_000_000_000_000
        case 18: 1_000_000_000_000_000_000
        default: 10_000_000_000_000_000_000
        }
    }

    /// The two-digit ASCII pairs "00" through "99", back to back.
    ///
    /// A computed `StaticString` is a pointer into constant data: no lazy global, no allocation.
    private static var digitPairs: StaticString {
        """
        00010203040506070809101112131415161718192021222324252627282930313233343536373839\
        40414243444546474849505152535455565758596061626364656667686970717273747576777879\
        8081828384858687888990919293949596979899
        """
    }

    /// Writes exactly `count` digits of `value` (zero-padded on the left) at `destination`.
    @inline(__always)
    private static func writeDigits(of value: UInt64, count: Int, to destination: UnsafeMutableRawPointer) {
        let pairs = digitPairs.utf8Start
        var remaining = value
        var end = count
        while end >= 2 {
            let quotient = remaining / 100
            let pair = Int(truncatingIfNeeded: remaining &- quotient &* 100) &* 2
            end &-= 2
            destination.storeBytes(of: pairs[pair], toByteOffset: end, as: UInt8.self)
            destination.storeBytes(of: pairs[pair &+ 1], toByteOffset: end &+ 1, as: UInt8.self)
            remaining = quotient
        }
        if end == 1 {
            destination.storeBytes(of: UInt8(truncatingIfNeeded: remaining) &+ UInt8(ascii: "0"), as: UInt8.self)
        }
    }
}
