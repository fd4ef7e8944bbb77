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

    /// The stack-built ECDSA-Sig (``SignatureDER/withECDSASignature(raw:width:_:)``, what verification uses) is
    /// byte for byte the array-built one, for every curve's width and halves with leading zeros, high bits, or 0.
    @Test func ecdsaSignatureOnTheStackIsTheSameDER() {
        for width in [32, 48, 66] {
            let halves: [[UInt8]] = [
                [UInt8](repeating: 0, count: width),
                [UInt8](repeating: 0xFF, count: width),
                [UInt8](repeating: 0, count: width - 1) + [0x80],
                [0x00, 0x7F] + [UInt8](repeating: 0x11, count: width - 2),
                (0..<width).map { UInt8(truncatingIfNeeded: $0 &* 91 &+ 200) },
            ]
            for r in halves {
                for s in halves {
                    let raw = r + s
                    let stacked = raw.withUnsafeBufferPointer { buffer in
                        SignatureDER.withECDSASignature(raw: buffer, width: width) { Array($0) }
                    }
                    #expect(stacked != nil)
                    #expect(stacked == SignatureDER.ecdsaSignature(raw: raw, width: width), "width \(width)")
                }
            }
            let short = [UInt8](repeating: 1, count: 2 * width - 1)
            #expect(
                short.withUnsafeBufferPointer { SignatureDER.withECDSASignature(raw: $0, width: width) { _ in 1 } }
                    == nil
            )
        }
    }
}
