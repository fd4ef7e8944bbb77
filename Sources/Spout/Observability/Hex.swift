import Synchronization

/// Lowercase hexadecimal, read and written on bytes.
enum Hex {
    /// Appends the low `digits` hex digits of `value` (at most 16), most significant first, in one append.
    @inline(__always)
    static func append(_ value: UInt64, digits count: Int, to bytes: inout [UInt8]) {
        // Eight digits per word: the nibbles are spread one per byte, then turned into ASCII all at once.
        var words = (spread(UInt32(truncatingIfNeeded: value >> 32)), spread(UInt32(truncatingIfNeeded: value)))
        withUnsafeBytes(of: &words) { raw in
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: raw[(16 - count)...]))
        }
    }

    /// Appends the 32 hex digits of a 128-bit value given as its two halves, in one append.
    @inline(__always)
    static func append128(_ high: UInt64, _ low: UInt64, to bytes: inout [UInt8]) {
        withDigits128(high, low) { bytes.append(contentsOf: $0) }
    }

    /// Lends `body` the 32 digits that ``append128(_:_:to:)`` appends.
    static func withDigits128<Result>(
        _ high: UInt64,
        _ low: UInt64,
        _ body: (UnsafeRawBufferPointer) -> Result
    ) -> Result {
        var words = (
            spread(UInt32(truncatingIfNeeded: high >> 32)), spread(UInt32(truncatingIfNeeded: high)),
            spread(UInt32(truncatingIfNeeded: low >> 32)), spread(UInt32(truncatingIfNeeded: low))
        )
        return withUnsafeBytes(of: &words, body)
    }

    /// The eight hex digits of `value` as ASCII bytes in a word whose memory order is the text's order.
    @inline(__always)
    private static func spread(_ value: UInt32) -> UInt64 {
        var x = UInt64(value)
        x = (x | (x << 16)) & 0x0000_FFFF_0000_FFFF
        x = (x | (x << 8)) & 0x00FF_00FF_00FF_00FF
        x = (x | (x << 4)) & 0x0F0F_0F0F_0F0F_0F0F  // byte i holds nibble i, the least significant first
        let letters = ((x &+ 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101  // 1 where the nibble is 10...15
        x = x &+ 0x3030_3030_3030_3030 &+ letters &* 0x27  // '0' + n, and 'a' - '0' - 10 = 0x27 more for letters
        return x.bigEndian  // in memory, the most significant digit first
    }

    /// The value of `digits` lowercase hex digits at `offset` (at most 16), or `nil` if one is not `0-9a-f`.
    static func parse(_ bytes: UnsafeBufferPointer<UInt8>, _ offset: Int, digits count: Int) -> UInt64? {
        var value: UInt64 = 0
        for index in offset..<(offset + count) {
            let byte = bytes[index]
            let nibble: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = byte &- UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = byte &- UInt8(ascii: "a") &+ 10
            default: return nil
            }
            value = value << 4 | UInt64(nibble)
        }
        return value
    }
}
