/// Base64url without padding (RFC 4648 §5, as JWS uses it: RFC 7515 §2), decoded strictly: only the URL-safe
/// alphabet, no `=`, no whitespace, no length that leaves 6 bits over, and the unused low bits of the last
/// character zero. One spelling per byte string, so a token cannot be altered into another that decodes the same.
///
/// **Thread safety:** stateless.
enum Base64URL {
    /// The bytes `text` encodes, or `nil` when it is not strict unpadded base64url.
    static func decode(_ text: some Collection<UInt8>) -> [UInt8]? {
        let remainder = text.count % 4
        guard remainder != 1 else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(text.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for character in text {
            guard let value = sextet(character) else { return nil }
            accumulator = (accumulator << 6) | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        // 2 or 4 bits left over: they must be zero (RFC 4648 §3.5, canonical encoding).
        guard accumulator == 0 else { return nil }
        return output
    }

    /// Decodes `text` into `output` (at least `text.count * 3 / 4` bytes long) without allocating: the number of
    /// bytes written, or `nil` when `text` is not strict unpadded base64url (as ``decode(_:)`` judges it).
    static func decode(_ text: UnsafeBufferPointer<UInt8>, into output: UnsafeMutableBufferPointer<UInt8>) -> Int? {
        let remainder = text.count % 4
        guard remainder != 1, output.count >= text.count * 3 / 4 else { return nil }
        var written = 0
        var index = 0
        let whole = text.count - remainder
        while index < whole {
            guard let a = sextet(text[index]), let b = sextet(text[index + 1]), let c = sextet(text[index + 2]),
                let d = sextet(text[index + 3])
            else { return nil }
            let group = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
            output[written] = UInt8(truncatingIfNeeded: group >> 16)
            output[written + 1] = UInt8(truncatingIfNeeded: group >> 8)
            output[written + 2] = UInt8(truncatingIfNeeded: group)
            written += 3
            index += 4
        }
        if remainder > 0 {
            var group: UInt32 = 0
            for offset in 0..<remainder {
                guard let value = sextet(text[index + offset]) else { return nil }
                group = group << 6 | UInt32(value)
            }
            // 2 characters: 12 bits, one byte and 4 bits over; 3 characters: 18 bits, two bytes and 2 over. The bits
            // over must be zero (RFC 4648 §3.5, canonical encoding).
            let over = remainder == 2 ? 4 : 2
            guard group & ((1 << UInt32(over)) - 1) == 0 else { return nil }
            group >>= UInt32(over)
            if remainder == 3 {
                output[written] = UInt8(truncatingIfNeeded: group >> 8)
                written += 1
            }
            output[written] = UInt8(truncatingIfNeeded: group)
            written += 1
        }
        return written
    }

    /// `bytes` as unpadded base64url.
    static func encode(_ bytes: some Collection<UInt8>) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        var output: [UInt8] = []
        var accumulator: UInt32 = 0
        var bits = 0
        for byte in bytes {
            accumulator = (accumulator << 8) | UInt32(byte)
            bits += 8
            while bits >= 6 {
                bits -= 6
                output.append(alphabet[Int((accumulator >> UInt32(bits)) & 0x3F)])
            }
            accumulator &= (1 << UInt32(bits)) - 1
        }
        if bits > 0 { output.append(alphabet[Int((accumulator << UInt32(6 - bits)) & 0x3F)]) }
        return String(decoding: output, as: UTF8.self)
    }

    private static func sextet(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): character - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): character - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0") + 52
        case UInt8(ascii: "-"): 62
        case UInt8(ascii: "_"): 63
        default: nil
        }
    }
}
