import Foundation
import Testing

@testable import Spout

@Suite struct JSONTextEscapingTests {
    /// The escaping the byte-at-a-time writer did, kept here as the reference for the run-copying one.
    private static func reference(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = [0x22]
        for byte in text.utf8 {
            switch byte {
            case 0x22: bytes += [0x5C, 0x22]
            case 0x5C: bytes += [0x5C, 0x5C]
            case 0x0A: bytes += [0x5C, UInt8(ascii: "n")]
            case 0x0D: bytes += [0x5C, UInt8(ascii: "r")]
            case 0x09: bytes += [0x5C, UInt8(ascii: "t")]
            case 0x00..<0x20, 0x7F:
                let hex = Array("0123456789abcdef".utf8)
                bytes += Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            default: bytes.append(byte)
            }
        }
        return bytes + [0x22]
    }

    @Test(arguments: [
        "",
        "plain",
        "\"",
        "a\"b\\c",
        "line\nbreak\r\ttab",
        "\u{0}\u{1}\u{1F}\u{7F} end",
        "ünïcødé ✓ \u{1F600}",
        "\\\\\"\"",
        String(repeating: "long text without escapes ", count: 20) + "\"",
    ])
    func escapesLikeTheReference(text: String) throws {
        var bytes: [UInt8] = [UInt8(ascii: "x")]
        JSONText.appendString(text, to: &bytes)
        #expect(bytes == [UInt8(ascii: "x")] + Self.reference(text))
        let decoded = try JSONSerialization.jsonObject(with: Data(bytes.dropFirst()), options: .fragmentsAllowed)
        #expect(decoded as? String == text)
    }

    @Test func escapesSubstringsAndFoundationStrings() {
        let text = "ab\"c\nd"
        let slice = text.dropFirst()
        var fromSlice: [UInt8] = []
        JSONText.appendString(slice, to: &fromSlice)
        #expect(fromSlice == Self.reference(String(slice)))

        // A string that came through Foundation.
        let lazy = NSString(string: "x\"\u{7F}y") as String
        var fromLazy: [UInt8] = []
        JSONText.appendString(lazy, to: &fromLazy)
        #expect(fromLazy == Self.reference("x\"\u{7F}y"))
    }
}

@Suite struct JSONTextNumberTests {
    @Test(
        arguments: [
            0, 1, 9, 10, 99, 100, 1_000_000_000_000_000_000, 9_999_999_999_999_999_999, UInt64.max,
        ] as [UInt64]
    )
    func unsignedIsItsDecimalText(value: UInt64) {
        var bytes: [UInt8] = [UInt8(ascii: "x")]
        JSONText.appendUnsigned(value, to: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == "x\(value)")
    }

    @Test(arguments: [0, -1, 7, -10, Int.max, Int.min])
    func integerIsItsDecimalText(value: Int) {
        var bytes: [UInt8] = []
        JSONText.appendInteger(value, to: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == String(value))
    }
}
