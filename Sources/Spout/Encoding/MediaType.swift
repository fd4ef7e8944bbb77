/// The representations Spout can produce for a sequence or a stream, and how a request picks one.
///
/// **Thread safety:** value type; not shared.
enum StreamFormat: String, CaseIterable, Sendable {
    /// Server-sent events, `text/event-stream`: the default, for `curl -N` and `EventSource`.
    case sse
    /// Newline-delimited JSON, `application/x-ndjson`.
    case ndjson
    /// One JSON document, `application/json`.
    case json

    /// The media type of this format's responses.
    var mediaType: String {
        switch self {
        case .sse: "text/event-stream"
        case .ndjson: "application/x-ndjson"
        case .json: "application/json"
        }
    }

    /// The type and subtype of ``mediaType``, split once here rather than per request.
    var mediaTypeParts: (type: String, subtype: String) {
        switch self {
        case .sse: ("text", "event-stream")
        case .ndjson: ("application", "x-ndjson")
        case .json: ("application", "json")
        }
    }

    /// ``mediaTypeParts`` as static text, for comparing with header bytes.
    var mediaTypeLiterals: (type: StaticString, subtype: StaticString) {
        switch self {
        case .sse: ("text", "event-stream")
        case .ndjson: ("application", "x-ndjson")
        case .json: ("application", "json")
        }
    }

    /// Chooses the format from `?format=` (which wins) or the `Accept` header (q-values honoured).
    ///
    /// With no `Accept`, or one that allows anything, the result is ``sse``. Among formats the client
    /// accepts equally, the one named most specifically wins (`application/json` beats `*/*`), then
    /// the order SSE, NDJSON, JSON.
    /// - Throws: ``Problem`` `400` for an unknown `format`, `406` when `Accept` excludes all three.
    static func negotiate(format: String?, accept: String?, allowed: [StreamFormat] = allCases)
        throws(Problem) -> StreamFormat
    {
        if let format {
            guard let chosen = StreamFormat(rawValue: format.lowercased()), allowed.contains(chosen) else {
                let names = allowed.map(\.rawValue).joined(separator: ", ")
                throw .invalidParameter("format", "format must be one of \(names), got \"\(format)\"")
            }
            return chosen
        }
        // On bytes: a string is all SP and HTAB characters exactly when it is all SP and HTAB bytes.
        guard let accept, !accept.utf8.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) else { return allowed.first ?? .sse }
        // The most common header of all, `Accept: application/json` exactly, names one format and no other: the
        // outcome of the ranking below, without it (about 1,700 instructions a request).
        // (`==` compares two ASCII strings' bytes in one block; `utf8.elementsEqual` walks them one by one.)
        if allowed.contains(.json), accept == "application/json" { return .json }
        var header = accept
        // The common `Accept: application/json` (ASCII, no parameters) is matched on its bytes, building nothing.
        let chosen: StreamFormat?? = header.withUTF8 { bytes in
            guard bytes.allSatisfy({ $0 < 0x80 && $0 != UInt8(ascii: ";") }) else { return nil }
            return choose(from: allowed) { candidate in
                let parts = candidate.mediaTypeLiterals
                return MediaRange.bestMatch(type: parts.type, subtype: parts.subtype, inParameterless: bytes)
            }
        }
        let ranges = chosen == nil ? MediaRange.parseList(accept) : []
        let best =
            chosen
            ?? choose(from: allowed) { candidate in
                let parts = candidate.mediaTypeParts
                return MediaRange.bestMatch(type: parts.type, subtype: parts.subtype, in: ranges)
            }
        guard let best else {
            throw .notAcceptable(accept, available: allowed.map(\.mediaType))
        }
        return best
    }

    /// The format among `allowed` that `match` (a candidate's best quality and specificity) ranks first.
    private static func choose(
        from allowed: [StreamFormat],
        matching match: (StreamFormat) -> (quality: Double, specificity: Int)?
    ) -> StreamFormat? {
        var best: (format: StreamFormat, quality: Double, specificity: Int)?
        for candidate in allowed {
            guard let match = match(candidate), match.quality > 0 else {
                continue
            }
            if let current = best,
                current.quality > match.quality
                    || (current.quality == match.quality && current.specificity >= match.specificity)
            {
                continue
            }
            best = (candidate, match.quality, match.specificity)
        }
        return best?.format
    }
}

/// One media range of an `Accept` header: `type/subtype` with a quality.
///
/// **Thread safety:** value type; not shared.
struct MediaRange: Equatable {
    var type: String
    var subtype: String
    var quality: Double

    /// Parses a comma-separated `Accept` value; malformed members are skipped, never fatal.
    static func parseList(_ header: String) -> [MediaRange] {
        // In ASCII every character is one byte, so bytes give the same members, trims and case as characters.
        if header.utf8.allSatisfy({ $0 < 0x80 }) { return parseASCIIList(header) }
        var result: [MediaRange] = []
        for member in header.split(separator: ",").prefix(64) {
            let parts = member.split(separator: ";")
            guard let range = parts.first else { continue }
            let pieces = range.trimmed.lowercased().split(separator: "/", omittingEmptySubsequences: false)
            guard pieces.count == 2, !pieces[0].isEmpty, !pieces[1].isEmpty else { continue }
            var quality = 1.0
            for parameter in parts.dropFirst() {
                let pair = parameter.split(separator: "=", maxSplits: 1)
                guard pair.count == 2, pair[0].trimmed.lowercased() == "q" else { continue }
                if let value = Double(pair[1].trimmed), value.isFinite, (0...1).contains(value) {
                    quality = value
                } else {
                    quality = 0
                }
            }
            result.append(MediaRange(type: String(pieces[0]), subtype: String(pieces[1]), quality: quality))
        }
        return result
    }

    /// ``parseList(_:)`` for an all-ASCII header, on its UTF-8 bytes rather than its characters.
    private static func parseASCIIList(_ header: String) -> [MediaRange] {
        var result: [MediaRange] = []
        for member in header.utf8.split(separator: UInt8(ascii: ",")).prefix(64) {
            let parts = member.split(separator: UInt8(ascii: ";"))
            guard let range = parts.first else { continue }
            let pieces = trimmed(range).split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
            guard pieces.count == 2, !pieces[0].isEmpty, !pieces[1].isEmpty else { continue }
            var quality = 1.0
            for parameter in parts.dropFirst() {
                let pair = parameter.split(separator: UInt8(ascii: "="), maxSplits: 1)
                guard pair.count == 2 else { continue }
                let name = trimmed(pair[0])
                guard name.count == 1, name.first == UInt8(ascii: "q") || name.first == UInt8(ascii: "Q") else {
                    continue
                }
                if let value = Double(Substring(trimmed(pair[1]))), value.isFinite, (0...1).contains(value) {
                    quality = value
                } else {
                    quality = 0
                }
            }
            result.append(MediaRange(type: lowercased(pieces[0]), subtype: lowercased(pieces[1]), quality: quality))
        }
        return result
    }

    private static func trimmed(_ bytes: Substring.UTF8View) -> Substring.UTF8View {
        var slice = bytes
        while let first = slice.first, first == UInt8(ascii: " ") || first == UInt8(ascii: "\t") { slice.removeFirst() }
        while let last = slice.last, last == UInt8(ascii: " ") || last == UInt8(ascii: "\t") { slice.removeLast() }
        return slice
    }

    /// ASCII bytes as a lower-case string; lower-casing (which allocates) only when an upper-case letter is there.
    private static func lowercased(_ bytes: Substring.UTF8View) -> String {
        let text = String(Substring(bytes))
        return bytes.contains(where: { $0 >= 0x41 && $0 <= 0x5A }) ? text.lowercased() : text
    }

    /// The quality and specificity (2 exact, 1 `type/*`, 0 `*/*`) of the most specific range matching `mediaType`.
    static func bestMatch(for mediaType: String, in ranges: [MediaRange]) -> (quality: Double, specificity: Int)? {
        let pieces = mediaType.split(separator: "/")
        return bestMatch(type: String(pieces[0]), subtype: String(pieces[1]), in: ranges)
    }

    /// The quality and specificity of the most specific range matching `type/subtype` (both lower case).
    static func bestMatch(type: String, subtype: String, in ranges: [MediaRange]) -> (
        quality: Double, specificity: Int
    )? {
        var best: (quality: Double, specificity: Int)?
        for range in ranges {
            let specificity: Int
            if range.type == type && range.subtype == subtype {
                specificity = 2
            } else if range.type == type && range.subtype == "*" {
                specificity = 1
            } else if range.type == "*" && range.subtype == "*" {
                specificity = 0
            } else {
                continue
            }
            if best == nil || specificity > best!.specificity {
                best = (range.quality, specificity)
            }
        }
        return best
    }
}

extension MediaRange {
    /// ``bestMatch(type:subtype:in:)`` over the ranges of an all-ASCII `Accept` value without `;` (so no
    /// parameters, every quality 1), read straight from its bytes: the members, trims, splits and case
    /// folding of ``parseList(_:)``, with nothing built.
    static func bestMatch(
        type: StaticString,
        subtype: StaticString,
        inParameterless header: UnsafeBufferPointer<UInt8>
    ) -> (quality: Double, specificity: Int)? {
        var best: Int?
        var members = 0
        var position = 0
        while position < header.count && members < 64 {
            let start = position
            while position < header.count && header[position] != UInt8(ascii: ",") { position += 1 }
            let end = position
            position += 1
            guard start < end else { continue }  // an empty member is no member
            members += 1
            var low = start
            var high = end
            while low < high && (header[low] == UInt8(ascii: " ") || header[low] == UInt8(ascii: "\t")) { low += 1 }
            while high > low && (header[high - 1] == UInt8(ascii: " ") || header[high - 1] == UInt8(ascii: "\t")) {
                high -= 1
            }
            guard let slash = (low..<high).first(where: { header[$0] == UInt8(ascii: "/") }),
                !(slash + 1..<high).contains(where: { header[$0] == UInt8(ascii: "/") }),
                low < slash, slash + 1 < high
            else {
                continue
            }
            let rangeType = UnsafeBufferPointer(rebasing: header[low..<slash])
            let rangeSubtype = UnsafeBufferPointer(rebasing: header[(slash + 1)..<high])
            let specificity: Int
            if ASCIIFolding.equals(rangeType, type) && ASCIIFolding.equals(rangeSubtype, subtype) {
                specificity = 2
            } else if ASCIIFolding.equals(rangeType, type) && isStar(rangeSubtype) {
                specificity = 1
            } else if isStar(rangeType) && isStar(rangeSubtype) {
                specificity = 0
            } else {
                continue
            }
            if best == nil || specificity > best! { best = specificity }
        }
        return best.map { (1.0, $0) }
    }

    private static func isStar(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        bytes.count == 1 && bytes[0] == UInt8(ascii: "*")
    }
}

extension Substring {
    fileprivate var trimmed: Substring {
        var slice = self
        while let first = slice.first, first == " " || first == "\t" { slice.removeFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice.removeLast() }
        return slice
    }
}
