import Testing

@testable import OpenSSL

/// The DER that ``SignatureDER`` builds for OpenSSL: minimal integers, long lengths, JWS `r ‖ s` to `ECDSA-Sig`.
@Suite struct SignatureDERTests {
    @Test func integersAreMinimalAndNonNegative() {
        #expect(SignatureDER.unsignedInteger([0x00, 0x00, 0x01]) == [0x02, 0x01, 0x01])
        #expect(SignatureDER.unsignedInteger([0x80]) == [0x02, 0x02, 0x00, 0x80])
        #expect(SignatureDER.unsignedInteger([0x00, 0x00]) == [0x02, 0x01, 0x00])
        #expect(SignatureDER.unsignedInteger([]) == [0x02, 0x01, 0x00])
    }

    @Test func longContentGetsALongFormLength() {
        #expect(Array(SignatureDER.element(0x04, [UInt8](repeating: 7, count: 0x7F)).prefix(2)) == [0x04, 0x7F])
        #expect(Array(SignatureDER.element(0x04, [UInt8](repeating: 7, count: 0x80)).prefix(3)) == [0x04, 0x81, 0x80])
        #expect(
            Array(SignatureDER.element(0x04, [UInt8](repeating: 7, count: 0x1234)).prefix(4)) == [
                0x04, 0x82, 0x12, 0x34,
            ]
        )
    }

    @Test func ecdsaSignatureFromRawHalves() {
        let raw = [UInt8](repeating: 0, count: 31) + [0x05] + [0xFF] + [UInt8](repeating: 0, count: 31)
        let der = SignatureDER.ecdsaSignature(raw: raw, width: 32)
        #expect(der == [0x30, 0x26, 0x02, 0x01, 0x05, 0x02, 0x21, 0x00, 0xFF] + [UInt8](repeating: 0, count: 31))
        #expect(SignatureDER.ecdsaSignature(raw: raw, width: 33) == nil)
    }
}
