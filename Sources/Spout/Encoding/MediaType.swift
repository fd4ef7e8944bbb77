/// The representations Spout can produce for a sequence or a stream, and how a request picks one.
///
/// **Thread safety:** value type; not shared.
public enum StreamFormat: String, CaseIterable, Sendable {
    /// Server-sent events, `text/event-stream`: the default, for `curl -N` and `EventSource`.
    case sse
    /// Newline-delimited JSON, `application/x-ndjson`.
    case ndjson
    /// One JSON document, `application/json`.
    case json

    /// The media type of this format's responses.
    public var mediaType: String {
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

    /// Chooses the format from `?format=` (which wins) or the `Accept` header (q-values honoured).
    ///
    /// With no `Accept`, or one that allows anything, the result is ``sse``. Among formats the client
    /// accepts equally, the one named most specifically wins (`application/json` beats `*/*`), then
    /// the order SSE, NDJSON, JSON.
    /// - Throws: ``Problem`` `400` for an unknown `format`, `406` when `Accept` excludes all three.
    public static func negotiate(format: String?, accept: String?, allowed: [StreamFormat] = allCases)
        throws(Problem) -> StreamFormat
    {
        if let format {
            guard let chosen = StreamFormat(rawValue: format.lowercased()), allowed.contains(chosen) else {
                let names = allowed.map(\.rawValue).joined(separator: ", ")
                throw .invalidParameter("format", "format must be one of \(names), got \"\(format)\"")
            }
            return chosen
        }
        guard let accept, !accept.allSatisfy({ $0 == " " || $0 == "\t" }) else { return allowed.first ?? .sse }
        let ranges = MediaRange.parseList(accept)
        var best: (format: StreamFormat, quality: Double, specificity: Int)?
        for candidate in allowed {
            let parts = candidate.mediaTypeParts
            guard let match = MediaRange.bestMatch(type: parts.type, subtype: parts.subtype, in: ranges),
                match.quality > 0
            else {
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
        guard let best else { throw .notAcceptable(accept, available: allowed.map(\.mediaType)) }
        return best.format
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
    static func bestMatch(type: String, subtype: String, in ranges: [MediaRange]) -> (quality: Double, specificity: Int)? {
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

extension Substring {
    fileprivate var trimmed: Substring {
        var slice = self
        while let first = slice.first, first == " " || first == "\t" { slice.removeFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice.removeLast() }
        return slice
    }
}
