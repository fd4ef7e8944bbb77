import Testing

@testable import Sequences

@Suite struct BigUIntTests {
    private static let limb: UInt64 = 1_000_000_000_000_000_000

    @Test func machineWordsPrintInDecimal() {
        #expect(BigUInt(0).description == "0")
        #expect(BigUInt(7).description == "7")
        #expect(BigUInt(Self.limb - 1).description == "999999999999999999")
        #expect(BigUInt(Self.limb).description == "1000000000000000000")
        #expect(BigUInt(UInt64.max).description == "18446744073709551615")
        #expect(BigUInt(UInt64.max) == BigUInt(Self.limb * 18) + BigUInt(UInt64.max - Self.limb * 18))
    }

    @Test func valuesBelowOneLimbKeepNoHighLimbs() {
        #expect(BigUInt(Self.limb - 1).high.isEmpty)
        #expect((BigUInt(Self.limb / 2) + BigUInt(Self.limb / 2 - 1)).high.isEmpty)
        #expect((BigUInt(Self.limb / 10) * 9).high.isEmpty)
        #expect(BigUInt(Self.limb).high == [1])
    }

    @Test func valuesBelowOneLimbAreHeldInlineWithoutAnArray() {
        #expect(BigUInt(Self.limb - 1).storage == .small(Self.limb - 1))
        #expect((BigUInt(Self.limb / 2) + BigUInt(Self.limb / 2 - 1)).storage == .small(Self.limb - 1))
        #expect((BigUInt(Self.limb / 10) * 9).storage == .small(Self.limb / 10 * 9))
        #expect(BigUInt(Self.limb).storage == .large([0, 1]))
        #expect((BigUInt(Self.limb - 1) + BigUInt(1)).storage == .large([0, 1]))
        #expect((BigUInt(UInt64.max) * UInt64.max).limbCount == 3)
        #expect((BigUInt(UInt64.max) * 0).storage == .small(0))
        // A large value plus a small one, either way round, stays large and canonical.
        #expect((BigUInt(2) + BigUInt(Self.limb)).storage == .large([2, 1]))
        #expect((BigUInt(Self.limb) + BigUInt(2)).storage == .large([2, 1]))
    }

    @Test func equalValuesHashAlikeWhicheverWayTheyWereMade() {
        let made = BigUInt(Self.limb - 1) + BigUInt(1)
        let direct = BigUInt(Self.limb)
        #expect(made == direct)
        #expect(made.hashValue == direct.hashValue)
        let small = BigUInt(Self.limb / 3) * 2
        #expect(small == BigUInt(Self.limb / 3 * 2))
        #expect(small.hashValue == BigUInt(Self.limb / 3 * 2).hashValue)
        #expect(small < made)
        #expect(!(made < small))
    }

    @Test func additionCarriesIntoANewLimb() {
        let sum = BigUInt(Self.limb - 1) + BigUInt(1)
        #expect(sum.description == "1000000000000000000")
        #expect(sum.limbCount == 2)
    }

    @Test func additionCarriesAcrossSeveralLimbs() {
        // 10^36 - 1 is two full limbs of nines; adding one ripples through both into a third.
        let nines = BigUInt(Self.limb - 1) * Self.limb + BigUInt(Self.limb - 1)
        #expect(nines.description == String(repeating: "9", count: 36))
        let sum = nines + BigUInt(1)
        #expect(sum.description == "1" + String(repeating: "0", count: 36))
        #expect(sum.limbCount == 3)
        var inPlace = BigUInt(1)
        inPlace += nines
        #expect(inPlace == sum)
    }

    @Test func additionWorksWithEitherOperandLonger() {
        let long = BigUInt(123) * Self.limb * Self.limb + BigUInt(Self.limb - 1)
        #expect(long + BigUInt(1) == BigUInt(1) + long)
        let expected = "123" + String(repeating: "0", count: 17) + "1" + String(repeating: "0", count: 18)
        #expect((long + BigUInt(1)).description == expected)
    }

    @Test func lowerLimbsArePaddedToEighteenDigits() {
        #expect((BigUInt(Self.limb) + BigUInt(5)).description == "1000000000000000005")
        let value = BigUInt(1) * Self.limb * Self.limb + BigUInt(7) * Self.limb + BigUInt(3)
        #expect(value.description == "1" + "000000000000000007" + "000000000000000003")
        #expect(value.decimalDigitCount == 37)
    }

    @Test func multiplicationByAWordMatchesSchoolbookStrings() {
        var value = BigUInt(1)
        var expected = "1"
        for factor: UInt64 in [UInt64.max, 3, Self.limb - 1, Self.limb, 1 << 63, 18_446_744_073, UInt64.max] {
            value *= factor
            expected = DecimalString.multiply(expected, String(factor))
            #expect(value.description == expected)
        }
        #expect(value * 1 == value)
    }

    @Test func multiplicationByZeroIsCanonicalZero() {
        let product = (BigUInt(UInt64.max) * UInt64.max) * 0
        #expect(product.isZero)
        #expect(product == .zero)
        #expect(product.hashValue == BigUInt.zero.hashValue)
        #expect(product.description == "0")
        #expect(!BigUInt(1).isZero)
    }

    @Test func comparisonOrdersByMagnitude() {
        let small = BigUInt(Self.limb - 1)
        let big = BigUInt(Self.limb)
        let bigger = BigUInt(Self.limb) + BigUInt(1)
        let huge = big * Self.limb
        #expect(small < big)
        #expect(big < bigger)
        #expect(bigger < huge)
        #expect(!(huge < bigger))
        #expect(!(big < big))
        #expect(BigUInt(3) * Self.limb + BigUInt(1) < BigUInt(3) * Self.limb + BigUInt(2))
        #expect([huge, small, bigger, big].sorted() == [small, big, bigger, huge])
    }

    @Test(arguments: 0...19)
    func digitCountAtPowersOfTen(exponent: Int) {
        var power: UInt64 = 1
        for _ in 0..<exponent { power *= 10 }
        #expect(BigUInt(power).decimalDigitCount == exponent + 1)
        #expect(BigUInt(power).description.count == exponent + 1)
        if power > 1 {
            #expect(BigUInt(power - 1).decimalDigitCount == exponent)
            #expect(BigUInt(power - 1).description == String(repeating: "9", count: exponent))
        }
    }

    @Test func writeDecimalFillsExactlyTheDigitCount() {
        let value = BigUInt(UInt64.max) * UInt64.max * 977
        let count = value.decimalDigitCount
        var bytes = [UInt8](repeating: UInt8(ascii: "#"), count: count + 3)
        let written = bytes.withUnsafeMutableBytes { value.writeDecimal(into: $0) }
        #expect(written == count)
        #expect(String(decoding: bytes[..<count], as: UTF8.self) == value.description)
        #expect(bytes[count...].allSatisfy { $0 == UInt8(ascii: "#") })
    }

    @Test func appendDecimalAppendsAfterExistingBytes() {
        var bytes = Array("data: ".utf8)
        (BigUInt(Self.limb) + BigUInt(42)).appendDecimal(to: &bytes)
        BigUInt(0).appendDecimal(to: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == "data: 10000000000000000420")
    }

    @Test func integerLiteralsAreValues() {
        let value: BigUInt = 12_345
        #expect(value == BigUInt(12_345))
    }
}
