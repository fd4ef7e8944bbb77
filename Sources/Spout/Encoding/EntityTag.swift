/// A strong entity tag (RFC 9110 §8.8.3) that Spout puts in `ETag`, and the `If-None-Match` test against it.
///
/// Spout only makes strong tags: each names one exact byte sequence, the `gzip` coding of a body included
/// (its tag is the identity tag with a suffix that names the compressor, see ``withCoding(_:)``).
///
/// **Thread safety:** value type; not shared.
struct EntityTag: Sendable, Equatable {
    /// The field value: the opaque tag in double quotes, as `ETag` carries it. Stored in this form so that a
    /// response writes it as it is.
    let headerValue: String

    /// A tag from its opaque part; `nil` when it holds a character an entity tag cannot carry.
    init?(opaque: String) {
        guard !opaque.isEmpty, opaque.utf8.allSatisfy(Self.isTagCharacter) else { return nil }
        self.init(unchecked: opaque)
    }

    /// A tag whose opaque part is known to be valid (built from `etagc` characters by Spout itself).
    init(unchecked opaque: String) {
        headerValue = "\"" + opaque + "\""
    }

    /// A tag whose quoted form was built by Spout itself (``build(capacity:_:)``).
    private init(quoted: String) {
        headerValue = quoted
    }

    /// The opaque tag between the quotes.
    var opaque: Substring { headerValue.dropFirst().dropLast() }

    /// Whether `bytes` (the inside of a quoted tag) is this tag's opaque part.
    func hasOpaque(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let utf8 = headerValue.utf8
        guard utf8.count == bytes.count + 2 else { return false }
        return utf8.dropFirst().dropLast().elementsEqual(bytes)
    }

    /// The tag of the same content sent with the content coding named `coding` (e.g. `gzip1-z1.2.13`): a
    /// different byte sequence, so a different strong tag (RFC 9110 §8.8.3.3).
    func withCoding(_ coding: String) -> EntityTag {
        EntityTag(quoted: String(headerValue.dropLast()) + "." + coding + "\"")
    }

    /// A tag written by `write` into at most `capacity` bytes (quotes added here), with one allocation: for tags
    /// made per request. `write` appends `etagc` bytes only (ASCII letters, digits, `-`, `.`).
    static func build(capacity: Int, _ write: (inout TagWriter) -> Void) -> EntityTag {
        let quoted = String(unsafeUninitializedCapacity: capacity + 2) { buffer in
            var writer = TagWriter(buffer: buffer)
            writer.append(UInt8(ascii: "\""))
            write(&writer)
            return writer.close()
        }
        return EntityTag(quoted: quoted)
    }

    /// Appends the bytes of a tag being built; bytes past the capacity are dropped (the caller sizes it).
    ///
    /// **Thread safety:** value type; lives for one ``EntityTag/build(capacity:_:)``.
    struct TagWriter {
        fileprivate let buffer: UnsafeMutableBufferPointer<UInt8>
        fileprivate(set) var count = 0

        fileprivate init(buffer: UnsafeMutableBufferPointer<UInt8>) {
            self.buffer = buffer
        }

        mutating func append(_ byte: UInt8) {
            // The last byte is kept for the closing quote.
            guard count < buffer.count - 1 else { return }
            buffer[count] = byte
            count += 1
        }

        /// Writes the closing quote; returns the length.
        fileprivate mutating func close() -> Int {
            buffer[count] = UInt8(ascii: "\"")
            return count + 1
        }

        mutating func append(_ text: StaticString) {
            let start = text.utf8Start
            for index in 0..<text.utf8CodeUnitCount { append(start[index]) }
        }

        mutating func append(_ text: String) {
            for byte in text.utf8 { append(byte) }
        }

        /// A non-negative integer in decimal.
        mutating func append(decimal value: Int) {
            var divisor = 1
            while divisor <= value / 10 { divisor &*= 10 }
            repeat {
                append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value / divisor % 10))
                divisor /= 10
            } while divisor > 0
        }
    }

    /// A tag for `bytes`: a 64-bit FNV-1a digest, for documents built once at start-up.
    static func digest(of bytes: [UInt8]) -> EntityTag {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return EntityTag(unchecked: String(repeating: "0", count: 16 - hex.count) + hex)
    }

    /// `etagc = %x21 / %x23-7E / obs-text`; Spout's own tags keep to ASCII.
    static func isTagCharacter(_ byte: UInt8) -> Bool {
        byte == 0x21 || (byte >= 0x23 && byte <= 0x7E)
    }
}

/// The `If-None-Match` precondition (RFC 9110 §13.1.2), read on the header's bytes.
///
/// **Thread safety:** stateless.
enum IfNoneMatch {
    /// The first of `candidates` that `header` matches by the weak comparison (`W/"x"` matches `"x"`), or
    /// the first candidate when the header is `*`; `nil` when none matches. A malformed member matches
    /// nothing, and whatever follows it is still read. At most 64 members are looked at.
    ///
    /// - Parameters:
    ///   - header: The `If-None-Match` field value (several fields joined with `,` are one list).
    ///   - candidates: The tags of the representations the server would be willing to send.
    static func match(_ header: String, candidates: [EntityTag]) -> EntityTag? {
        guard !candidates.isEmpty else { return nil }
        var header = header
        return header.withUTF8 { bytes -> EntityTag? in
            var position = 0
            var members = 0
            while position < bytes.count && members < 64 {
                skip(whitespaceAndCommasIn: bytes, at: &position)
                guard position < bytes.count else { break }
                members += 1
                if bytes[position] == UInt8(ascii: "*") {
                    position += 1
                    if isMemberEnd(bytes, position) { return candidates[0] }
                    skipMember(bytes, &position)
                    continue
                }
                if position + 1 < bytes.count && bytes[position] == UInt8(ascii: "W")
                    && bytes[position + 1] == UInt8(ascii: "/")
                {
                    position += 2
                }
                guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else {
                    skipMember(bytes, &position)
                    continue
                }
                let start = position + 1
                var end = start
                while end < bytes.count && EntityTag.isTagCharacter(bytes[end]) { end += 1 }
                guard end < bytes.count, bytes[end] == UInt8(ascii: "\""), isMemberEnd(bytes, end + 1) else {
                    skipMember(bytes, &position)
                    continue
                }
                position = end + 1
                let opaque = UnsafeBufferPointer(rebasing: bytes[start..<end])
                for candidate in candidates where candidate.hasOpaque(opaque) {
                    return candidate
                }
            }
            return nil
        }
    }

    private static func skip(whitespaceAndCommasIn bytes: UnsafeBufferPointer<UInt8>, at position: inout Int) {
        while position < bytes.count,
            bytes[position] == UInt8(ascii: ",") || bytes[position] == UInt8(ascii: " ")
                || bytes[position] == UInt8(ascii: "\t")
        {
            position += 1
        }
    }

    /// Whether only optional whitespace lies between `position` and the next `,` or the end.
    private static func isMemberEnd(_ bytes: UnsafeBufferPointer<UInt8>, _ position: Int) -> Bool {
        var position = position
        while position < bytes.count && (bytes[position] == UInt8(ascii: " ") || bytes[position] == UInt8(ascii: "\t"))
        {
            position += 1
        }
        return position == bytes.count || bytes[position] == UInt8(ascii: ",")
    }

    /// Moves past a malformed member, to its closing `,` (a quoted part may hold commas).
    private static func skipMember(_ bytes: UnsafeBufferPointer<UInt8>, _ position: inout Int) {
        var quoted = false
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") { quoted.toggle() }
            if byte == UInt8(ascii: ",") && !quoted { return }
            position += 1
        }
    }
}
