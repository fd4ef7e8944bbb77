// libFuzzer entry point for content negotiation (`StreamFormat.negotiate` and `MediaRange`,
// Sources/Spout/Encoding/MediaType.swift). Built by fuzz/run.sh against the HTTPServer module and the Spout sources it
// needs. The first input byte picks the offered formats (and whether the rest is a `?format=` value); the rest is the
// `Accept` value. Besides "no input traps, leaks or hangs":
// - every parsed range has a type and subtype, a finite q-value in 0...1, and at most 64 ranges are kept;
// - the byte-level matcher for parameterless ASCII headers agrees with the general parser, and the parser's byte path
//   for ASCII headers agrees with its character path for the rest (reached by adding a non-ASCII member);
// - the negotiated format is one of those offered, the best by quality then specificity then order, and a 406
//   comes exactly when no offered format has a q-value above 0;
// - media types are case-insensitive: an ASCII header upper-cased negotiates the same.

@testable import Spout

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    guard let selector = input.first else { return 0 }
    let offered = StreamFormat.allCases.enumerated().filter { selector & (1 << $0.offset) != 0 }.map(\.element)
    guard !offered.isEmpty else { return 0 }
    let text = String(decoding: input.dropFirst(), as: UTF8.self)
    if selector & 0x08 != 0 {
        checkFormatParameter(text, offered: offered)
        return 0
    }
    let ranges = MediaRange.parseList(text)
    checkRanges(ranges, of: text)
    if text.utf8.allSatisfy({ $0 < 0x80 && $0 != UInt8(ascii: ";") }) {
        checkByteMatcher(text, against: ranges)
    }
    if text.utf8.allSatisfy({ $0 < 0x80 }) {
        checkCharacterParser(text, against: ranges)
    }
    let chosen = negotiate(text, offered: offered)
    let expected = reference(text, ranges: ranges, offered: offered)
    if chosen != expected {
        fatalError("Accept \(text.debugDescription) offering \(offered): got \(chosen), expected \(expected)")
    }
    if text.utf8.allSatisfy({ $0 < 0x80 }) {
        let upper = negotiate(text.uppercased(), offered: offered)
        if upper != chosen { fatalError("Accept \(text.debugDescription): \(chosen), upper-cased \(upper)") }
    }
    return 0
}

/// The format, or the status of the problem thrown.
private enum Outcome: Equatable {
    case format(StreamFormat)
    case problem(Int)
}

private func negotiate(_ accept: String, offered: [StreamFormat]) -> Outcome {
    do throws(Problem) {
        let format = try StreamFormat.negotiate(format: nil, accept: accept, allowed: offered)
        guard offered.contains(format) else { fatalError("\(format) was not offered (\(offered))") }
        return .format(format)
    } catch {
        if error.status != 406 || error.type != Problem.Kind.notAcceptable { fatalError("unexpected \(error)") }
        return .problem(406)
    }
}

/// The negotiation rule restated over the general parser: the highest q-value above 0, then the most specific
/// range, then the offered order; the first offered format when the header is blank.
private func reference(_ accept: String, ranges: [MediaRange], offered: [StreamFormat]) -> Outcome {
    if accept.utf8.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { return .format(offered[0]) }
    var best: (format: StreamFormat, quality: Double, specificity: Int)?
    for format in offered {
        let (type, subtype) = format.mediaTypeParts
        guard let match = MediaRange.bestMatch(type: type, subtype: subtype, in: ranges), match.quality > 0 else {
            continue
        }
        if let current = best,
            current.quality > match.quality
                || (current.quality == match.quality && current.specificity >= match.specificity)
        {
            continue
        }
        best = (format, match.quality, match.specificity)
    }
    return best.map { .format($0.format) } ?? .problem(406)
}

private func checkRanges(_ ranges: [MediaRange], of text: String) {
    if ranges.count > 64 { fatalError("\(ranges.count) ranges kept from \(text.debugDescription)") }
    for range in ranges {
        guard !range.type.isEmpty, !range.subtype.isEmpty, range.quality.isFinite, (0...1).contains(range.quality)
        else {
            fatalError("bad range \(range) from \(text.debugDescription)")
        }
        if range.type.contains("/") || range.subtype.contains("/") { fatalError("slash inside \(range)") }
        if text.utf8.allSatisfy({ $0 < 0x80 }),
            (range.type + range.subtype).utf8.contains(where: { $0 >= 0x41 && $0 <= 0x5A })
        {
            fatalError("upper case kept in \(range)")
        }
    }
}

private func checkByteMatcher(_ text: String, against ranges: [MediaRange]) {
    var header = text
    header.withUTF8 { bytes in
        for format in StreamFormat.allCases {
            let literals = format.mediaTypeLiterals
            let parts = format.mediaTypeParts
            let byBytes = MediaRange.bestMatch(type: literals.type, subtype: literals.subtype, inParameterless: bytes)
            let general = MediaRange.bestMatch(type: parts.type, subtype: parts.subtype, in: ranges)
            if byBytes?.quality != general?.quality || byBytes?.specificity != general?.specificity {
                fatalError(
                    "\(format) in \(text.debugDescription): bytes \(String(describing: byBytes)), parsed \(String(describing: general))"
                )
            }
        }
    }
}

/// An ASCII header parses the same on bytes as on characters: a non-ASCII member appended sends the whole header
/// through the character path, which must give the same ranges plus that member (unless the 64-member cap drops it).
private func checkCharacterParser(_ text: String, against ranges: [MediaRange]) {
    let extra = MediaRange(type: "\u{E9}", subtype: "\u{E9}", quality: 1)
    let members = text.utf8.split(separator: UInt8(ascii: ",")).count
    let general = MediaRange.parseList(text + ",\u{E9}/\u{E9}")
    let expected = members < 64 ? ranges + [extra] : ranges
    if general != expected {
        fatalError("Accept \(text.debugDescription): bytes gave \(ranges), characters \(general)")
    }
}

private func checkFormatParameter(_ text: String, offered: [StreamFormat]) {
    do throws(Problem) {
        let format = try StreamFormat.negotiate(format: text, accept: "application/json", allowed: offered)
        guard offered.contains(format), format.rawValue == text.lowercased() else {
            fatalError("format \(text.debugDescription) gave \(format) from \(offered)")
        }
    } catch {
        if error.status != 400 { fatalError("unexpected \(error)") }
        if let named = StreamFormat(rawValue: text.lowercased()), offered.contains(named) {
            fatalError("offered format \(text.debugDescription) refused")
        }
    }
}
