import Testing

@testable import Spout

/// `If-None-Match` (RFC 9110 §13.1.2) and the tags it is compared with.
@Suite struct IfNoneMatchTests {
    static let tag = EntityTag(unchecked: "s1-fibonacci-0-10")
    static let coded = tag.withCoding("gzip1-z1.2.13")

    @Test(
        arguments: [
            (#""s1-fibonacci-0-10""#, "s1-fibonacci-0-10"),
            (#"W/"s1-fibonacci-0-10""#, "s1-fibonacci-0-10"),  // weak comparison: W/ is ignored
            ("*", "s1-fibonacci-0-10"),  // any current representation
            (" * ", "s1-fibonacci-0-10"),
            (#""other", "s1-fibonacci-0-10""#, "s1-fibonacci-0-10"),
            (#""other",W/"s1-fibonacci-0-10.gzip1-z1.2.13""#, "s1-fibonacci-0-10.gzip1-z1.2.13"),
            (#""a,b", "s1-fibonacci-0-10""#, "s1-fibonacci-0-10"),  // a comma inside a tag is part of it
            (#"garbage, "s1-fibonacci-0-10""#, "s1-fibonacci-0-10"),  // a malformed member does not hide the rest
            (#""unterminated, "s1-fibonacci-0-10""#, nil),  // ... but a quote opened is a quote
            (#""s1-fibonacci-0-1""#, nil),
            (#""s1-fibonacci-0-10"x"#, nil),
            (#"s1-fibonacci-0-10"#, nil),  // not quoted
            (#"w/"s1-fibonacci-0-10""#, nil),  // the weak prefix is case-sensitive
            ("", nil),
            (",,,", nil),
            ("*x", nil),
        ] as [(String, String?)]
    )
    func matchesByWeakComparison(header: String, matched: String?) {
        #expect(IfNoneMatch.match(header, candidates: [Self.tag, Self.coded]).map { String($0.opaque) } == matched)
    }

    @Test func onlyTheFirst64MembersAreRead() {
        let many = Array(repeating: #""x""#, count: 64).joined(separator: ",") + #","s1-fibonacci-0-10""#
        #expect(IfNoneMatch.match(many, candidates: [Self.tag]) == nil)
        let fewer = Array(repeating: #""x""#, count: 63).joined(separator: ",") + #","s1-fibonacci-0-10""#
        #expect(IfNoneMatch.match(fewer, candidates: [Self.tag]) == Self.tag)
    }

    @Test func tagsCarryOnlyTagCharacters() {
        #expect(EntityTag(opaque: "abc-1.2") != nil)
        #expect(EntityTag(opaque: "") == nil)
        #expect(EntityTag(opaque: "a\"b") == nil)
        #expect(EntityTag(opaque: "a b") == nil)
        #expect(Self.tag.headerValue == #""s1-fibonacci-0-10""#)
        #expect(Self.coded.opaque == "s1-fibonacci-0-10.gzip1-z1.2.13")
    }

    @Test func builtTagsAreTheirBytesInQuotes() {
        let tag = EntityTag.build(capacity: 31) { writer in
            writer.append("s1-" as StaticString)
            writer.append("primes")
            writer.append(UInt8(ascii: "-"))
            writer.append(decimal: 0)
            writer.append(UInt8(ascii: "-"))
            writer.append(decimal: Int.max)
        }
        #expect(tag.headerValue == #""s1-primes-0-9223372036854775807""#)
        #expect(tag == EntityTag(opaque: "s1-primes-0-9223372036854775807"))
        // A writer that is given too little room drops what does not fit, and the quotes stay.
        let short = EntityTag.build(capacity: 3) { $0.append("abcdef") }
        #expect(short.headerValue == #""abc""#)
    }

    @Test func digestsAreStableAndSensitive() {
        let digest = EntityTag.digest(of: Array("hello".utf8))
        #expect(digest == EntityTag.digest(of: Array("hello".utf8)))
        #expect(digest != EntityTag.digest(of: Array("hellp".utf8)))
        #expect(digest.opaque.count == 16)
        // FNV-1a 64 of "hello".
        #expect(digest.opaque == "a430d84680aabd0b")
    }
}

/// `Accept-Encoding` (RFC 9110 §12.5.3) as it decides between gzip and no coding.
@Suite struct AcceptEncodingTests {
    @Test(
        arguments: [
            (nil, false, false),
            ("", false, false),
            ("gzip", true, false),
            ("GZIP", true, false),
            ("x-gzip", true, false),
            ("gzip, deflate, br, zstd", true, false),
            ("br;q=1.0, gzip;q=0.8, *;q=0.1", true, false),
            ("deflate, br", false, false),
            ("gzip;q=0", false, false),
            ("gzip ; q=0.000", false, false),
            ("gzip;q=0.001", true, false),
            ("*", true, false),
            ("*;q=0", false, true),
            ("*;q=0, gzip", true, true),
            ("identity;q=0", false, true),
            ("gzip, identity;q=0", true, true),
            ("identity, gzip;q=0.5", false, false),  // identity named with a higher quality wins
            ("identity;q=0.5, gzip", true, false),
            ("gzip;q=0.5, *;q=0.8", false, false),  // * covers identity here, at 0.8
            ("gzip;q=1.5", false, false),  // malformed quality counts as 0
            ("gzip;q=abc", false, false),
            ("gzip;level=9;q=0.5", true, false),
            (" , gzip ,", true, false),
            ("gzipx", false, false),
        ] as [(String?, Bool, Bool)]
    )
    func decidesFromQualities(header: String?, prefersGzip: Bool, refusesIdentity: Bool) {
        let parsed = AcceptEncoding(header)
        #expect(parsed.prefersGzip == prefersGzip)
        #expect(parsed.refusesIdentity == refusesIdentity)
    }

    @Test(
        arguments: [("0", 0), ("1", 1000), ("0.5", 500), ("0.125", 125), ("1.000", 1000), ("0.", 0)] as [(String, Int)]
    )
    func readsQualityValues(text: String, thousandths: Int) {
        var text = text
        #expect(text.withUTF8 { AcceptEncoding.qualityValue($0) } == thousandths)
    }

    @Test(arguments: ["1.001", "2", "0.1234", ".5", "-1", "1.5"])
    func rejectsMalformedQualityValues(text: String) {
        var text = text
        #expect(text.withUTF8 { AcceptEncoding.qualityValue($0) } == nil)
    }
}
