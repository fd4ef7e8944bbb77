/// A strong entity tag (RFC 9110 §8.8.3) that Spout puts in `ETag`, and the `If-None-Match` test against it.
///
/// Spout only makes strong tags: each names one exact byte sequence, the `gzip` coding of a body included
/// (its tag is the identity tag with a suffix that names the compressor, see ``withCoding(_:)``).
///
/// **Thread safety:** value type; not shared.
public struct EntityTag: Sendable, Equatable {
    /// The opaque tag between the quotes: `etagc` characters only (no `"`, no controls, no spaces).
    public let opaque: String

    /// A tag from its opaque part; `nil` when it holds a character an entity tag cannot carry.
    public init?(opaque: String) {
        guard !opaque.isEmpty, opaque.utf8.allSatisfy(Self.isTagCharacter) else { return nil }
        self.opaque = opaque
    }

    /// A tag whose opaque part is known to be valid (built from `etagc` characters by Spout itself).
    init(unchecked opaque: String) {
        self.opaque = opaque
    }

    /// The field value: the opaque part in double quotes.
    public var headerValue: String { "\"" + opaque + "\"" }

    /// The tag of the same content sent with the content coding named `coding` (e.g. `gzip-z1.3.1`): a
    /// different byte sequence, so a different strong tag (RFC 9110 §8.8.3.3).
    public func withCoding(_ coding: String) -> EntityTag {
        EntityTag(unchecked: opaque + "." + coding)
    }

    /// A tag for `bytes`: a 64-bit FNV-1a digest, for documents built once at start-up.
    public static func digest(of bytes: [UInt8]) -> EntityTag {
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
public enum IfNoneMatch {
    /// The first of `candidates` that `header` matches by the weak comparison (`W/"x"` matches `"x"`), or
    /// the first candidate when the header is `*`; `nil` when none matches. A malformed member matches
    /// nothing, and whatever follows it is still read. At most 64 members are looked at.
    ///
    /// - Parameters:
    ///   - header: The `If-None-Match` field value (several fields joined with `,` are one list).
    ///   - candidates: The tags of the representations the server would be willing to send.
    public static func match(_ header: String, candidates: [EntityTag]) -> EntityTag? {
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
                for candidate in candidates where candidate.opaque.utf8.elementsEqual(opaque) {
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
