import Testing

@testable import Spout

/// The one strict JSON reader, and the rules its three users (configuration files, JWT headers and claims, publish
/// bodies) share through it: each rule is checked on the reader and through every user.
@Suite struct StrictJSONReaderTests {
    /// The error of skipping `text` as a whole document, or `nil` when it is JSON.
    static func error(_ text: String) -> StrictJSONReader.SyntaxError? {
        error(Array(text.utf8))
    }

    static func error(_ bytes: [UInt8]) -> StrictJSONReader.SyntaxError? {
        bytes.withUnsafeBufferPointer { buffer in
            var reader = StrictJSONReader(buffer)
            do throws(StrictJSONReader.SyntaxError) {
                try reader.skip(depth: 0)
                try reader.end()
                return nil
            } catch {
                return error
            }
        }
    }

    /// `text`'s value, copied compactly.
    static func compact(_ text: String) throws(StrictJSONReader.SyntaxError) -> String {
        try Array(text.utf8).withUnsafeBufferPointer { buffer throws(StrictJSONReader.SyntaxError) in
            var reader = StrictJSONReader(buffer)
            let copy = try reader.copyCompact(depth: 0)
            try reader.end()
            return String(decoding: copy, as: UTF8.self)
        }
    }

    /// The users' verdicts on `value`: as a configuration file, as the value of an unread JWT claim, and as the
    /// `data` of a publish body; `true` when accepted.
    static func verdicts(_ value: String) -> (config: Bool, jwt: Bool, publish: Bool) {
        let config = (try? ConfigJSON.parse(Array(value.utf8))) != nil
        let jwt = (try? JWTClaims.parse(Array(#"{"x":"#.utf8) + Array(value.utf8) + [UInt8(ascii: "}")])) != nil
        let publish = ChannelPublishBodyTests.refusal(#"{"data":"# + value + "}") == nil
        return (config, jwt, publish)
    }

    static func nested(_ depth: Int, around inner: String = "") -> String {
        String(repeating: "[", count: depth) + inner + String(repeating: "]", count: depth)
    }

    @Test func sixtyFourLevelsAreAcceptedAndSixtyFiveRefusedByTheReaderAndEveryUser() throws {
        #expect(Self.error(Self.nested(64)) == nil)
        #expect(Self.error(Self.nested(64, around: "1")) == nil)  // a scalar is no level
        let objects = String(repeating: #"{"a":"#, count: 64) + "1" + String(repeating: "}", count: 64)
        #expect(Self.error(objects) == nil)
        let deep = try #require(Self.error(Self.nested(65)))
        #expect(deep.kind == .tooDeep && deep.offset == 64 && deep.reason == "nesting deeper than 64 levels")
        #expect(Self.error(#"{"a":"# + objects + "}")?.kind == .tooDeep)

        // A configuration file is its own document.
        #expect(try ConfigJSON.parse(Array(Self.nested(64, around: "true").utf8)) != .null)
        #expect(throws: ConfigJSON.SyntaxError(line: 1, column: 65, reason: "nesting deeper than 64 levels")) {
            try ConfigJSON.parse(Array(Self.nested(65).utf8))
        }
        // A claim is inside the payload's object: 63 more levels.
        #expect(Self.verdicts(Self.nested(63)).jwt)
        #expect(!Self.verdicts(Self.nested(64)).jwt)
        // A publish body's data counts its levels from itself.
        #expect(Self.verdicts(Self.nested(64, around: "1")).publish)
        let refusal = try #require(ChannelPublishBodyTests.refusal(#"[{"data":"# + Self.nested(65) + "}]"))
        #expect(refusal.detail == "the data in item 0 nests deeper than 64 levels")
    }

    @Test func aMemberTwiceIsRefusedHoweverItsNameIsEscaped() throws {
        for text in [#"{"a":1,"a":2}"#, #"{"a":1,"\u0061":2}"#, #"{"\u0061":1,"a":2}"#, #"{"x":[{"é":1,"\u00e9":2}]}"#]
        {
            let error = try #require(Self.error(text), "\(text)")
            #expect(error.kind == .duplicate(name: text.contains("x") ? "é" : "a"), "\(text)")
            #expect(error.reason.hasPrefix("duplicate key"))
        }
        #expect(Self.error(#"{"a":{"a":1},"b":{"a":1}}"#) == nil)  // one name per object
        // The offset is the second name's opening quote.
        #expect(Self.error(#"{"a":1, "\u0061":2}"#)?.offset == 8)

        #expect(throws: ConfigJSON.SyntaxError(line: 2, column: 1, reason: "duplicate key \"port\"")) {
            try ConfigJSON.parse(Array("{\"port\": 1,\n\"p\\u006frt\": 2}".utf8))
        }
        let data = try #require(ChannelPublishBodyTests.refusal(#"{"data":{"k":1,"\u006b":2}}"#))
        #expect(data.status == 400 && data.detail.contains("duplicate key \"k\""), "\(data.detail)")
        #expect(
            ChannelPublishBodyTests.refusal(#"{"data":1,"\u0065vent":"a","event":"b"}"#)?.detail.contains("given twice")
                == true
        )
        #expect(!Self.verdicts(#"{"k":1,"\u006b":2}"#).jwt)
        #expect(throws: TokenRefusal.self) { try JWTClaims.parse(Array(#"{"sub":"a","s\u0075b":"b"}"#.utf8)) }
    }

    /// Past the first 16 members an object's names are checked through a set (so that a hostile object costs
    /// linear time): a duplicate is found there too, escaped or not, early or late; names are compared as
    /// Unicode scalars, so canonically equivalent but different names are two members, as RFC 8259 §8.3 reads.
    @Test func aMemberTwiceIsFoundInAnObjectOfManyMembers() throws {
        func object(_ count: Int, then extra: String = "") -> String {
            "{" + (0..<count).map { #""m\#($0)":\#($0)"# }.joined(separator: ",") + extra + "}"
        }
        #expect(Self.error(object(5_000)) == nil)
        for (extra, name) in [
            (#","m3":0"#, "m3"), (#","\u006d3":0"#, "m3"), (#","m4999":0"#, "m4999"), (#","m\u0034999":0"#, "m4999"),
        ] {
            let error = try #require(Self.error(object(5_000, then: extra)), "\(extra)")
            #expect(error.kind == .duplicate(name: name), "\(extra)")
        }
        // The 17th member repeating the 1st, just past the in-place comparisons.
        #expect(Self.error(object(16, then: #","m0":0"#))?.kind == .duplicate(name: "m0"))
        #expect(Self.error(object(15, then: #","m0":0"#))?.kind == .duplicate(name: "m0"))
        let data = try #require(ChannelPublishBodyTests.refusal(#"{"data":"# + object(300, then: #","m299":1"#) + "}"))
        #expect(data.status == 400 && data.detail.contains("duplicate key \"m299\""), "\(data.detail)")

        for count in [1, 40] {
            let equivalent = object(count, then: #","\u00e9":1,"e\u0301":2"#)
            #expect(Self.error(equivalent) == nil, "\(count)")
        }
    }

    @Test func aLoneSurrogateIsRefusedAndAPairDecodes() throws {
        for text in [#""\ud800""#, #""\udc00""#, #""\ud800\u0041""#, #""\ud800x""#, #""\ud83d\ud83d""#, #""a\udfff""#] {
            let error = try #require(Self.error(text), "\(text)")
            #expect(error.reason.hasPrefix("a lone surrogate \\u"), "\(text): \(error.reason)")
            #expect(Self.verdicts(text) == (false, false, false), "\(text)")
        }
        #expect(Self.error(#""\ud800""#)?.offset == 7)
        #expect(try ConfigJSON.parse(Array(#""\ud83d\ude00\u00e9""#.utf8)) == .string("😀é"))
        #expect(try JWTClaims.parse(Array(#"{"sub":"\ud83d\ude00"}"#.utf8)).subject == "😀")
        #expect(
            try ChannelPublishBodyTests.parse(#"{"data":"\ud83d\ude00"}"#).map(ChannelPublishBodyTests.data) == [
                #""\ud83d\ude00""#
            ]
        )
        // In an event type, too.
        #expect(ChannelPublishBodyTests.refusal(#"{"data":1,"event":"\udc00"}"#)?.status == 400)
    }

    /// What every user accepts and refuses alike (documents deep enough for the depth limit aside: where a value
    /// sits differs between users).
    @Test func theThreeUsersAgree() {
        let values = [
            "1", "-0", "0.5", "1e10", "1E+2", "-1.5e-3", "01", "-01", "1.", ".5", "+1", "-", "1e", "1e+", "0x1", "NaN",
            "true", "false", "null", "tru", "nul", "True", #""""#, #""a\"b\\c\/d\b\f\n\r\t""#, #""\q""#, #""\u12""#,
            #""\u12G4""#, "\"tab\there\"", "\"line\nbreak\"", #""\u0000""#, #""é""#, #""unterminated"#, "[]", "{}",
            "[1,2]", "[1,]", "[,1]", "[1 2]", #"{"a":1,}"#, #"{"a" 1}"#, #"{a:1}"#, #"{"a":1 "b":2}"#, "{'a':1}",
            #"{"":1,"":2}"#, #"{"a\"b":1,"a\u0022b":2}"#, "[1]/* c */", "// c\n1", "1 2", "[", "]", "{", "",
        ]
        for value in values {
            let verdicts = Self.verdicts(value)
            let accepted = Self.error(value) == nil
            #expect(verdicts == (accepted, accepted, accepted), "\(value)")
        }
        // Invalid UTF-8 in a string, and a byte that starts nothing.
        for bytes in [[0x22, 0xC3, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0x80]] as [[UInt8]] {
            #expect(Self.error(bytes) != nil)
            #expect((try? ConfigJSON.parse(bytes)) == nil)
            #expect((try? JWTClaims.parse(Array(#"{"x":"#.utf8) + bytes + [0x7D])) == nil)
            #expect(ChannelPublishBodyTests.refusal(Array(#"{"data":"#.utf8) + bytes + [0x7D])?.status == 400)
        }
    }

    @Test func errorsSayWhatAndWhere() {
        let cases: [(String, Int, String)] = [
            ("[1,]", 3, "trailing comma before \"]\""),
            (#"{"a":1,}"#, 7, "trailing comma before \"}\""),
            (#"{"a":1 2}"#, 7, "expected \",\" or \"}\", got \"2\""),
            ("[1", 2, "expected \",\" or \"]\", got end of file"),
            (#"{"a" 1}"#, 5, "expected \":\" after the member name, got \"1\""),
            ("{1:2}", 1, "expected a member name in double quotes, got \"1\""),
            ("[01]", 1, "a number with a leading zero"),
            ("-x", 1, "a number needs digits after \"-\""),
            ("1.e3", 2, "a number needs digits after \".\""),
            ("1e+", 3, "a number needs digits in its exponent"),
            (#""\x""#, 2, "an unknown escape \\\"x\""),
            (#""\u00G0""#, 5, "\\u needs four hex digits"),
            ("\"a\u{1}\"", 2, "a control character inside a string (escape it)"),
            (#"["abc"#, 1, "a string that never ends"),
            ("nul", 0, "expected a value, got \"n\""),
            ("1 x", 2, "unexpected \"x\" after the document"),
            ("\u{7F}", 0, "expected a value, got byte 0x7f"),
        ]
        for (text, offset, reason) in cases {
            #expect(
                Self.error(text) == StrictJSONReader.SyntaxError(kind: .grammar, reason: reason, offset: offset),
                "\(text)"
            )
        }
        // The UTF-8 of a string is checked between escapes: the error is at the start of the run at fault.
        let bytes = Array(#""ab\nc"#.utf8) + [0xC3] + [0x22]
        #expect(
            Self.error(bytes)
                == StrictJSONReader.SyntaxError(kind: .grammar, reason: "a string that is not valid UTF-8", offset: 5)
        )
    }

    @Test func aByteOrderMarkIsSkippedWhereAllowed() throws {
        #expect(Self.error([0xEF, 0xBB, 0xBF] + Array("[1]".utf8)) == nil)
        #expect(Self.error([0xEF, 0xBB, 0xBF, 0xEF, 0xBB, 0xBF] + Array("[1]".utf8)) != nil)  // once
        #expect(try ConfigJSON.parse([0xEF, 0xBB, 0xBF] + Array("[1]".utf8)) == .array([.number(text: "1", value: 1)]))
        #expect(try JWTClaims.parse([0xEF, 0xBB, 0xBF] + Array(#"{"sub":"a"}"#.utf8)).subject == "a")
        // Not in a publish body: a client sends JSON alone.
        #expect(ChannelPublishBodyTests.refusal([0xEF, 0xBB, 0xBF] + Array(#"{"data":1}"#.utf8))?.status == 400)
    }

    @Test func aCompactCopyDropsWhitespaceAndKeepsTheRestAsWritten() throws {
        #expect(
            try Self.compact(" { \"a\" : [ 1 , -2.50e+3 , true , false , null ] ,\n\"b\\u0063\" : { } } ")
                == #"{"a":[1,-2.50e+3,true,false,null],"b\u0063":{}}"#
        )
        #expect(try Self.compact(#"  " x\/y\ud83d\ude00 "  "#) == #"" x\/y\ud83d\ude00 ""#)
        #expect(throws: StrictJSONReader.SyntaxError.self) { try Self.compact(#"{"a":1,"a":1}"#) }
    }

    @Test func numbersReadAsDoublesAndAsWritten() throws {
        func number(_ text: String) throws(StrictJSONReader.SyntaxError) -> Double {
            try Array(text.utf8).withUnsafeBufferPointer { buffer throws(StrictJSONReader.SyntaxError) in
                var reader = StrictJSONReader(buffer)
                return try reader.number()
            }
        }
        #expect(try number("1799245791") == 1_799_245_791)
        #expect(try number("-42") == -42)
        #expect(try number("-0").sign == .minus)
        #expect(try number("999999999999999") == 999_999_999_999_999)
        #expect(try number("12345678901234567890") == 1.2345678901234567890e19)
        #expect(try number("1.5e3") == 1500)
        #expect(try number("2E-1") == 0.2)
        #expect(throws: StrictJSONReader.SyntaxError.self) { try number("\"1\"") }
        #expect(try ConfigJSON.parse(Array("80.0".utf8)) == .number(text: "80.0", value: 80))
    }
}
