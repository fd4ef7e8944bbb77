/// What an `Accept-Encoding` header (RFC 9110 §12.5.3) allows, for the one coding Spout can apply, `gzip`.
///
/// `gzip` (or its alias `x-gzip`) is acceptable with a quality above 0, named or through `*`; `identity`
/// (no coding) is acceptable unless `identity;q=0`, or `*;q=0` without an `identity` member, excludes it.
/// When both are acceptable, the higher quality wins and a tie goes to `gzip`; an `identity` that the header
/// does not name (itself or through `*`) loses to any acceptable `gzip`. Read on the header's bytes;
/// malformed members are skipped and a malformed quality counts as 0, so no header fails the request.
///
/// **Thread safety:** value type; not shared.
struct AcceptEncoding: Sendable, Equatable {
    /// Whether the client takes a `gzip` body and prefers it (or likes it as well as no coding).
    let prefersGzip: Bool
    /// Whether the header excludes an uncoded body.
    let refusesIdentity: Bool

    /// What `header` allows; a missing header allows only what Spout sends anyway, no coding.
    init(_ header: String?) {
        guard var header else {
            prefersGzip = false
            refusesIdentity = false
            return
        }
        // Qualities in thousandths; nil when the member is absent.
        var gzip: Int?
        var identity: Int?
        var star: Int?
        header.withUTF8 { bytes in
            var position = 0
            var members = 0
            while position < bytes.count && members < 64 {
                let start = position
                while position < bytes.count && bytes[position] != UInt8(ascii: ",") { position += 1 }
                let member = UnsafeBufferPointer(rebasing: bytes[start..<position])
                position += 1
                guard let (coding, quality) = Self.parse(member) else { continue }
                members += 1
                switch coding {
                case .gzip: gzip = max(gzip ?? 0, quality)
                case .identity: identity = max(identity ?? 0, quality)
                case .star: star = max(star ?? 0, quality)
                case .other: break
                }
            }
        }
        let gzipQuality = gzip ?? star ?? 0
        // An identity that neither a member nor `*` names is acceptable but does not compete on quality.
        let identityQuality = identity ?? star
        refusesIdentity = identityQuality == 0
        prefersGzip = gzipQuality > 0 && gzipQuality >= (identityQuality ?? 0)
    }

    private enum Coding {
        case gzip
        case identity
        case star
        case other
    }

    /// One member, `coding [ OWS ";" OWS "q=" qvalue ]` with other parameters ignored; `nil` if empty or malformed.
    private static func parse(_ member: UnsafeBufferPointer<UInt8>) -> (Coding, Int)? {
        var low = 0
        var high = member.count
        trim(member, &low, &high)
        guard low < high else { return nil }
        var nameEnd = low
        while nameEnd < high && member[nameEnd] != UInt8(ascii: ";") { nameEnd += 1 }
        var tokenEnd = nameEnd
        while tokenEnd > low && isSpace(member[tokenEnd - 1]) { tokenEnd -= 1 }
        let name = UnsafeBufferPointer(rebasing: member[low..<tokenEnd])
        guard !name.isEmpty else { return nil }
        let coding: Coding
        if ASCIIFolding.equals(name, "gzip") || ASCIIFolding.equals(name, "x-gzip") {
            coding = .gzip
        } else if ASCIIFolding.equals(name, "identity") {
            coding = .identity
        } else if name.count == 1 && name[0] == UInt8(ascii: "*") {
            coding = .star
        } else {
            coding = .other
        }
        var quality = 1000
        var position = nameEnd
        while position < high {
            // At a `;`: one parameter up to the next `;`.
            position += 1
            let start = position
            while position < high && member[position] != UInt8(ascii: ";") { position += 1 }
            var from = start
            var to = position
            trim(member, &from, &to)
            guard to - from >= 2, member[from] | 0x20 == UInt8(ascii: "q") else { continue }
            var cursor = from + 1
            while cursor < to && isSpace(member[cursor]) { cursor += 1 }
            guard cursor < to, member[cursor] == UInt8(ascii: "=") else { continue }
            cursor += 1
            while cursor < to && isSpace(member[cursor]) { cursor += 1 }
            quality = qualityValue(UnsafeBufferPointer(rebasing: member[cursor..<to])) ?? 0
        }
        return (coding, quality)
    }

    /// A `qvalue` (`0`, `0.5`, `1.000`) in thousandths; `nil` when malformed or above 1.
    static func qualityValue(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        guard let first = bytes.first, first == UInt8(ascii: "0") || first == UInt8(ascii: "1") else { return nil }
        var value = Int(first - UInt8(ascii: "0")) * 1000
        guard bytes.count > 1 else { return value }
        guard bytes[1] == UInt8(ascii: "."), bytes.count <= 5 else { return nil }
        var scale = 100
        for index in 2..<bytes.count {
            let digit = bytes[index]
            guard digit >= UInt8(ascii: "0") && digit <= UInt8(ascii: "9") else { return nil }
            value += Int(digit - UInt8(ascii: "0")) * scale
            scale /= 10
        }
        return value <= 1000 ? value : nil
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t")
    }

    private static func trim(_ bytes: UnsafeBufferPointer<UInt8>, _ low: inout Int, _ high: inout Int) {
        while low < high && isSpace(bytes[low]) { low += 1 }
        while high > low && isSpace(bytes[high - 1]) { high -= 1 }
    }
}
