import EventLoops
import Foundation
import HTTPServer
import TestSupport
import Testing

@testable import Spout

/// Event ids as clients send them back: only `<epoch>-<sequence>` of the documented shape parses.
@Suite struct ChannelEventIDTests {
    @Test func formatsAndParsesBack() throws {
        let id = ChannelEventID(epoch: "mitq0a1c", sequence: 42)
        #expect(id.description == "mitq0a1c-42")
        #expect(ChannelEventID("mitq0a1c-42") == id)
        let longest = ChannelEventID(epoch: String(repeating: "z", count: 16), sequence: 9_999_999_999_999_999_999)
        #expect(ChannelEventID(longest.description) == longest)
        #expect(ChannelEventID("0-0") == ChannelEventID(epoch: "0", sequence: 0))
        // Parsing takes substrings too (the header value as sliced).
        let text = "xx abc-7 yy"
        #expect(ChannelEventID(text.dropFirst(3).dropLast(3)) == ChannelEventID(epoch: "abc", sequence: 7))
    }

    @Test func theEpochIsTheStartInBase36() {
        #expect(ChannelEventID.epoch(startedAtMilliseconds: 0) == "0")
        #expect(ChannelEventID.epoch(startedAtMilliseconds: 35) == "z")
        #expect(ChannelEventID.epoch(startedAtMilliseconds: 36) == "10")
        // A present-day start fits the 16 characters an id's epoch may have.
        let now = ChannelEventID.epoch(startedAtMilliseconds: 1_800_000_000_000)
        #expect(ChannelEventID("\(now)-1")?.epoch == now)
        #expect(ChannelEventID.epoch(startedAtMilliseconds: UInt64.max).count <= 16)
    }

    @Test(
        arguments: [
            "", "-", "--", "-1", "a-", "a--1", "a-b-1", "A-1", "ABC-1", "abc_1", "abc1", "abc-1a", "abc-a1", "abc- 1",
            " abc-1", "abc-1 ", "abc-1\n", "abc-+1", "abc--1", "abc-1.0", "abc-0x10", "é-1", "abc-١", "a\u{0}-1",
            "abc-18446744073709551616", "abc-99999999999999999999", "abc-00000000000000000001",
            String(repeating: "a", count: 17) + "-1", String(repeating: "a", count: 1_000_000) + "-1",
            "abc-" + String(repeating: "9", count: 1_000_000), String(repeating: "-", count: 100_000),
        ].map { Abbreviated($0) }
    )
    func hostileTextIsNotAnID(_ text: Abbreviated<String>) {
        #expect(ChannelEventID(text.value) == nil, "\(text.value.prefix(40))")
    }

    @Test func leadingZerosWithinNineteenDigitsStillParse() {
        // Nineteen digits at most, whatever their value: "007" is 7.
        #expect(ChannelEventID("abc-007")?.sequence == 7)
        #expect(ChannelEventID("abc-" + String(repeating: "0", count: 19))?.sequence == 0)
    }
}

/// The history ring: count, byte and age limits, and where a resuming client picks up.
@Suite struct ChannelHistoryTests {
    static func event(_ sequence: UInt64, at time: UInt64 = 0, data: String = "1") -> ChannelEvent {
        ChannelEvent(
            id: ChannelEventID(epoch: "e", sequence: sequence),
            type: nil,
            data: Array(data.utf8),
            publishedAt: time
        )
    }

    static func history(events: Int = 1_000, bytes: Int = 1 << 30, age: UInt64 = UInt64.max) -> ChannelHistory {
        ChannelHistory(limits: .init(events: events, bytes: bytes, ageNanoseconds: age))
    }

    static func sequences(_ events: [ChannelEvent]?) -> [UInt64]? { events?.map(\.sequence) }

    @Test func keepsTheNewestWithinTheCount() {
        var history = Self.history(events: 3)
        #expect(history.isEmpty && history.oldest == nil && history.latest == nil)
        for sequence in 1...5 { history.append(Self.event(UInt64(sequence))) }
        #expect(history.count == 3)
        #expect(history.oldest?.sequence == 3)
        #expect(history.latest?.sequence == 5)
        #expect(history.all.map(\.sequence) == [3, 4, 5])
        #expect(history.bytes == history.all.reduce(0) { $0 + $1.byteCount })
    }

    @Test func aZeroCountKeepsNothing() {
        var history = Self.history(events: 0)
        history.append(Self.event(1))
        #expect(history.isEmpty && history.bytes == 0)
        #expect(Self.sequences(history.events(after: 0)) == [])
    }

    @Test func keepsTheNewestWithinTheBytesAndAlwaysTheLatest() {
        let size = Self.event(1).byteCount
        var history = Self.history(bytes: size * 5 / 2)
        for sequence in 1...6 { history.append(Self.event(UInt64(sequence))) }
        #expect(history.all.map(\.sequence) == [5, 6])
        #expect(history.bytes == 2 * size)
        // An event larger than the whole limit is kept alone, until the next one arrives.
        history.append(Self.event(7, data: String(repeating: "x", count: size * 4)))
        #expect(history.all.map(\.sequence) == [7])
        history.append(Self.event(8))
        #expect(history.all.map(\.sequence) == [8])
        #expect(history.bytes == size)
    }

    @Test func expiresByAge() {
        var history = Self.history(age: 100)
        history.append(Self.event(1, at: 1_000))
        history.append(Self.event(2, at: 1_050))
        history.append(Self.event(3, at: 1_100))
        history.expire(now: 1_100)
        #expect(history.count == 3)
        history.expire(now: 1_100 + 1)  // the first is 101 ns old
        #expect(history.all.map(\.sequence) == [2, 3])
        history.expire(now: 900)  // a clock reading before the events drops nothing
        #expect(history.all.map(\.sequence) == [2, 3])
        history.expire(now: 1_000_000)
        #expect(history.isEmpty && history.bytes == 0)
    }

    @Test func eventsAfterAnIDAtEveryEdge() {
        var history = Self.history(events: 3)
        #expect(Self.sequences(history.events(after: 0)) == [], "an empty history has nothing to replay")
        #expect(Self.sequences(history.events(after: 17)) == [])
        for sequence in 1...5 { history.append(Self.event(UInt64(sequence))) }  // holds 3, 4, 5
        #expect(Self.sequences(history.events(after: 5)) == [], "the newest: nothing missed")
        #expect(Self.sequences(history.events(after: 4)) == [5])
        #expect(Self.sequences(history.events(after: 3)) == [4, 5])
        #expect(Self.sequences(history.events(after: 2)) == [3, 4, 5], "just before the oldest: all, no gap")
        #expect(history.events(after: 1) == nil, "event 2 was dropped: truncated")
        #expect(history.events(after: 0) == nil)
        #expect(Self.sequences(history.events(after: 6)) == [], "a future id replays nothing")
        #expect(Self.sequences(history.events(after: UInt64.max - 1)) == [])
    }

    @Test func staysConsistentAcrossItsCompactions() {
        // Thousands of appends through a window of 100 pass every compaction path of the ring.
        var history = Self.history(events: 100)
        for sequence in 1...5_000 {
            history.append(Self.event(UInt64(sequence)))
            let low = UInt64(max(1, sequence - 99))
            #expect(history.oldest?.sequence == low)
            #expect(history.latest?.sequence == UInt64(sequence))
            if sequence % 97 == 0 {
                #expect(Self.sequences(history.events(after: low)) == Array((low + 1)...UInt64(sequence)))
                #expect(history.all.count == history.count)
            }
        }
        #expect(history.bytes == history.all.reduce(0) { $0 + $1.byteCount })
    }
}

/// The publish body: what is accepted, its compact form, and every refusal.
@Suite struct ChannelPublishBodyTests {
    static func parse(_ text: String, max: Int = 65_536) throws(Problem) -> [ChannelPublication] {
        try ChannelPublishBody(Array(text.utf8), maxDataBytes: max).publications
    }

    static func refusal(_ bytes: [UInt8], max: Int = 65_536) -> Problem? {
        do {
            _ = try ChannelPublishBody(bytes, maxDataBytes: max)
            return nil
        } catch {
            return error
        }
    }

    static func refusal(_ text: String, max: Int = 65_536) -> Problem? { refusal(Array(text.utf8), max: max) }

    static func data(_ publication: ChannelPublication) -> String { String(decoding: publication.data, as: UTF8.self) }

    @Test func oneEventWithAndWithoutAType() throws {
        let plain = try Self.parse(#"{"data":1}"#)
        #expect(plain == [ChannelPublication(type: nil, data: Array("1".utf8))])
        let typed = try Self.parse(
            " \r\n\t{ \"event\" : \"job.done\" ,\n \"data\" : { \"a\" : [ 1 , 2 , { } , [ ] ] } }\n "
        )
        #expect(typed.map(\.type) == ["job.done"])
        #expect(typed.map(Self.data) == [#"{"a":[1,2,{},[]]}"#])
        // Any JSON value is data.
        for value in ["null", "true", "false", "0", "-1.5e-3", #""text""#, "[]", "{}"] {
            #expect(try Self.parse(#"{"data":"# + value + "}").map(Self.data) == [value])
        }
        // A member name is a JSON string: escapes spell the same name.
        #expect(try Self.parse(#"{"d\u0061ta":2}"#).map(Self.data) == ["2"])
    }

    @Test func aBatchKeepsItsOrder() throws {
        let batch = try Self.parse(#"[ {"data":1}, {"event":"t","data":"two"} ,{"data":[3]} ]"#)
        #expect(batch.map(\.type) == [nil, "t", nil])
        #expect(batch.map(Self.data) == ["1", #""two""#, "[3]"])
    }

    @Test func compactionKeepsStringsEscapesAndNumbersExactly() throws {
        let strings = #"["  spaced  out  ","a\"b\\c\/d","\u00e9\uD83D\ude00","é😀","\b\f\n\r\t","\u0000"]"#
        #expect(try Self.parse("{\"data\": \(strings)}").map(Self.data) == [strings])
        let numbers = "[0,-0,1,-1,0.5,-0.0,1e10,1E+10,1e-10,-12.34E-056,123456789012345678901234567890,1.000]"
        let spaced = numbers.replacingOccurrences(of: ",", with: " ,\n ")
        #expect(try Self.parse("{\"data\": [ \(spaced.dropFirst().dropLast()) ] }").map(Self.data) == [numbers])
        let keys = #"{"k y":{"":"","\"":[" : , "]}}"#
        #expect(try Self.parse(#"{"data":"# + keys + "}").map(Self.data) == [keys])
    }

    @Test func nestingUpToTheLimitIsAccepted() throws {
        let depth = ChannelPublishBody.maxDepth
        let arrays = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        #expect(try Self.parse(#"{"data":"# + arrays + "}").map(Self.data) == [arrays])
        let deeper = "[" + arrays + "]"
        #expect(Self.refusal(#"{"data":"# + deeper + "}")?.status == 400)
    }

    @Test func tenThousandLevelsOfNestingAreRefusedWithoutCrashing() throws {
        let arrays = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        let problem = try #require(Self.refusal(#"{"data":"# + arrays + "}"))
        #expect(problem.status == 400)
        #expect(problem.detail.contains("nests deeper"))
        let objects = String(repeating: #"{"a":"#, count: 10_000) + "1" + String(repeating: "}", count: 10_000)
        #expect(Self.refusal(#"{"data":"# + objects + "}")?.status == 400)
        // Unclosed, too.
        #expect(Self.refusal(#"{"data":"# + String(repeating: "[", count: 100_000))?.status == 400)
    }

    @Test(arguments: [
        "", " \n", "{", "}", "[", "]", "null", "1", #""data""#, "{data:1}", #"{"data" 1}"#, #"{"data":}"#,
        #"{"data":1,}"#, #"{"data":1 "event":"x"}"#, #"{"data":[1,]}"#, #"{"data":[1 2]}"#, #"{"data":{"a" 1}}"#,
        #"{"data":{1:2}}"#, #"{"data":{"a":1,}}"#, #"{"data":01}"#, #"{"data":1.}"#, #"{"data":.5}"#,
        #"{"data":+1}"#, #"{"data":-}"#, #"{"data":1e}"#, #"{"data":1e+}"#, #"{"data":tru}"#, #"{"data":True}"#,
        #"{"data":nul}"#, #"{"data":NaN}"#, #"{"data":Infinity}"#, #"{"data":'x'}"#, #"{"data":"a\x"}"#,
        #"{"data":"\u12"}"#, #"{"data":"\u12G4"}"#, "{\"data\":\"raw\nline\"}", "{\"data\":\"tab\there\"}",
        #"{"data":"unterminated"#, #"{"data":"a\"#, "// c\n{\"data\":1}", #"{"data":1}/* c */"#,
        #"{"data":1} {"data":2}"#, #"{"data":1}x"#, #"{"data":1}}"#, #"{"data":1}]"#, #"[{"data":1},]"#,
        #"[{"data":1} {"data":2}]"#, #"[{"data":1}"#, "[]", "[ ]", "[1]", #"[[{"data":1}]]"#, #"[{"data":1},2]"#,
        "\u{FEFF}{\"data\":1}",
    ])
    func invalidJSONIsA400(_ text: String) {
        let problem = Self.refusal(text)
        #expect(problem?.status == 400, "\(text)")
        #expect(problem?.type == ProblemType.invalidBody.uri)
    }

    @Test(arguments: [
        #"{}"#, #"{ }"#, #"{"event":"x"}"#, #"[{"data":1},{"event":"x"}]"#, #"[{}]"#,
    ])
    func aMissingDataIsA400NamingIt(_ text: String) {
        let problem = Self.refusal(text)
        #expect(problem?.status == 400)
        #expect(problem?.detail.contains("missing \"data\"") == true, "\(problem?.detail ?? "accepted")")
    }

    @Test func anUnknownOrRepeatedMemberIsA400() throws {
        let unknown = try #require(Self.refusal(#"{"data":1,"extra":2}"#))
        #expect(unknown.status == 400 && unknown.detail.contains("unknown member \"extra\""))
        #expect(Self.refusal(#"{"id":"x","data":1}"#)?.detail.contains("unknown member") == true)
        #expect(Self.refusal(#"{"Data":1}"#)?.detail.contains("unknown member") == true)
        let twice = try #require(Self.refusal(#"{"data":1,"data":2}"#))
        #expect(twice.status == 400 && twice.detail.contains("given twice"))
        #expect(Self.refusal(#"{"d\u0061ta":1,"data":2}"#)?.detail.contains("given twice") == true)
        #expect(Self.refusal(#"{"event":"a","event":"b","data":1}"#)?.detail.contains("given twice") == true)
        #expect(Self.refusal(#"[{"data":1},{"data":1,"x":0}]"#)?.detail.contains("in item 1") == true)
    }

    @Test func theEventTypeIsANonEmptyStringWithoutControlCharactersAndNotAFrameOfTheStream() throws {
        let longest = String(repeating: "t", count: ChannelPublishBody.maxTypeCharacters)
        #expect(try Self.parse(#"{"data":1,"event":"\#(longest)"}"#).map(\.type) == [longest])
        // Counted in characters, as the schema's maxLength counts: 128 two-byte characters are fine.
        let wide = String(repeating: "é", count: ChannelPublishBody.maxTypeCharacters)
        #expect(try Self.parse(#"{"data":1,"event":"\#(wide)"}"#).map(\.type) == [wide])
        #expect(try Self.parse(#"{"data":1,"event":"ünïcödé ok"}"#).map(\.type) == ["ünïcödé ok"])
        #expect(try Self.parse(#"{"data":1,"event":"resets"}"#).map(\.type) == ["resets"])
        for bad in [
            #""""#, "5", "null", "[\"x\"]", #""a\nb""#, #""a\rb""#, #""a\u0000b""#, #""\u007f""#,
            "\"" + longest + "t\"", #""reset""#, #""gap""#, #""end""#, #""error""#,
        ] {
            let problem = Self.refusal(#"{"data":1,"event":"# + bad + "}")
            #expect(problem?.status == 400, "event \(bad)")
            #expect(problem?.detail.contains("\"event\"") == true, "event \(bad): \(problem?.detail ?? "accepted")")
        }
    }

    @Test func dataOverTheLimitIsA413AndWhitespaceDoesNotCount() throws {
        #expect(try Self.parse(#"{"data":"12345678"}"#, max: 10).map(Self.data) == [#""12345678""#])
        let over = try #require(Self.refusal(#"{"data":"123456789"}"#, max: 10))
        #expect(over.status == 413)
        #expect(over.type == ProblemType.contentTooLarge.uri)
        #expect(over.detail.contains("11 bytes") && over.detail.contains("channels.maxEventBytes"))
        #expect(try Self.parse("{\"data\": [ 1 ,  2 ,  3 ,  4 ] }", max: 9).map(Self.data) == ["[1,2,3,4]"])
        // One item of a batch over the limit refuses the batch.
        #expect(Self.refusal(#"[{"data":1},{"data":"123456789"}]"#, max: 10)?.status == 413)
    }

    @Test(
        arguments: [
            [0xFF],
            Array(#"{"data":""#.utf8) + [0xFF] + Array(#""}"#.utf8),
            Array(#"{"data":""#.utf8) + [0xC0, 0xAF] + Array(#""}"#.utf8),  // overlong '/'
            Array(#"{"data":""#.utf8) + [0xED, 0xA0, 0x80] + Array(#""}"#.utf8),  // a surrogate in UTF-8
            Array(#"{"data":""#.utf8) + [0xF4, 0x90, 0x80, 0x80] + Array(#""}"#.utf8),  // past U+10FFFF
            Array(#"{"data":1,"event":""#.utf8) + [0xE2, 0x82] + Array(#""}"#.utf8),  // truncated sequence
            Array(#"{"data":1}"#.utf8) + [0x80],
        ] as [[UInt8]]
    )
    func invalidUTF8IsA400(_ bytes: [UInt8]) {
        let problem = Self.refusal(bytes)
        #expect(problem?.status == 400)
        #expect(problem?.detail.contains("UTF-8") == true)
    }
}

/// Who may publish and subscribe.
@Suite struct ChannelAccessTests {
    static func access(publish: [String] = [], subscribe: [String] = []) -> ChannelAccess {
        var configuration = SpoutConfiguration.Channels()
        configuration.publishTokens = publish
        configuration.subscribeTokens = subscribe
        return ChannelAccess(configuration: configuration)
    }

    static func token(_ header: String?) -> String? {
        ChannelAccess.bearerToken(header).map { String(decoding: $0, as: UTF8.self) }
    }

    @Test func bearerParsing() {
        #expect(Self.token("Bearer abc") == "abc")
        #expect(Self.token("bearer abc") == "abc")
        #expect(Self.token("BEARER abc") == "abc")
        #expect(Self.token("bEaReR abc") == "abc")
        #expect(Self.token("Bearer    abc  ") == "abc")
        #expect(Self.token("Bearer a b") == "a b")
        #expect(Self.token("Bearer abc=.-_~+/") == "abc=.-_~+/")
        for refused: String? in [
            nil, "", "Bearer", "Bearer ", "Bearer      ", "Bearerabc", "Bearer\tabc", "Basic YWJjOmRlZg==",
            "Token abc", " Bearer abc", "Bear abc", "Bearer:abc", "Bearer\u{0}abc", "Béarer abc", "bearer\u{C0}abc",
        ] {
            #expect(Self.token(refused) == nil, "\(String(describing: refused))")
        }
    }

    @Test func constantTimeComparisonIsEquality() {
        let secret = Array("s3cret".utf8)
        #expect(PeerTrust.equalInConstantTime(secret, secret))
        #expect(!PeerTrust.equalInConstantTime(Array("s3cre".utf8), secret), "a prefix")
        #expect(!PeerTrust.equalInConstantTime(Array("s3cret!".utf8), secret), "a longer token")
        #expect(!PeerTrust.equalInConstantTime(Array("S3cret".utf8), secret), "the first byte differs")
        #expect(!PeerTrust.equalInConstantTime(Array("s3creT".utf8), secret), "the last byte differs")
        #expect(!PeerTrust.equalInConstantTime([], secret))
        #expect(!PeerTrust.equalInConstantTime([], []), "an empty token matches nothing")
        #expect(!PeerTrust.equalInConstantTime(secret + [0], secret), "a trailing NUL is not padding")
        #expect(!PeerTrust.equalInConstantTime(Array(secret.dropLast()) + [0], secret))
        #expect(ChannelAccess.matches(secret, [Array("other".utf8), secret, Array("third".utf8)]))
        #expect(ChannelAccess.matches(secret, [secret, secret]))
        #expect(!ChannelAccess.matches(secret, [Array("other".utf8)]))
        #expect(!ChannelAccess.matches(secret, []))
    }

    @Test func loopbackAddresses() {
        for address in ["127.0.0.1", "127.255.0.9", "::1", "::ffff:127.0.0.1"] {
            #expect(PeerTrust.isLoopback(address), "\(address)")
        }
        for address in [
            "", "10.0.0.1", "192.168.1.127", "203.0.113.5", "0.0.0.0", "::", "::2", "fe80::1", "::ffff:10.0.0.1",
            "1127.0.0.1", "128.0.0.1", "::ffff:128.0.0.1", "2001:db8::1",
        ] {
            #expect(!PeerTrust.isLoopback(address), "\(address)")
        }
    }

    @Test func withoutPublishTokensOnlyLoopbackPublishes() {
        let access = Self.access()
        #expect(access.checkPublish(authorization: nil, remoteAddress: "127.0.0.1") == nil)
        #expect(access.checkPublish(authorization: nil, remoteAddress: "::1") == nil)
        #expect(access.checkPublish(authorization: "Bearer anything", remoteAddress: "::1") == nil)
        for remote in ["203.0.113.5", "10.1.2.3", "2001:db8::1", "::ffff:192.0.2.1"] {
            let refusal = access.checkPublish(authorization: nil, remoteAddress: remote)
            #expect(refusal?.status == 403, "\(remote)")
            #expect(refusal?.type == ProblemType.forbidden.uri)
            // A token does not help when none is configured.
            #expect(access.checkPublish(authorization: "Bearer x", remoteAddress: remote)?.status == 403)
        }
    }

    @Test func withPublishTokensTheTokenDecidesWhereverTheClientIs() {
        let access = Self.access(publish: ["one", "two"])
        for remote in ["127.0.0.1", "203.0.113.5"] {
            #expect(access.checkPublish(authorization: nil, remoteAddress: remote)?.status == 401)
            #expect(access.checkPublish(authorization: "Basic b25lOg==", remoteAddress: remote)?.status == 401)
            #expect(access.checkPublish(authorization: "Bearer three", remoteAddress: remote)?.status == 403)
            #expect(access.checkPublish(authorization: "Bearer on", remoteAddress: remote)?.status == 403)
            #expect(access.checkPublish(authorization: "Bearer one", remoteAddress: remote) == nil)
            #expect(access.checkPublish(authorization: "bearer two", remoteAddress: remote) == nil)
        }
        // Subscribing stays open without subscribe tokens.
        #expect(!access.subscribingNeedsToken)
        #expect(access.checkSubscribe(authorization: nil, queryToken: nil) == nil)
    }

    @Test func subscribeTokensByHeaderOrQuery() {
        let access = Self.access(subscribe: ["watch"])
        #expect(access.subscribingNeedsToken)
        #expect(access.checkSubscribe(authorization: nil, queryToken: nil)?.status == 401)
        #expect(access.checkSubscribe(authorization: "Bearer watch", queryToken: nil) == nil)
        #expect(access.checkSubscribe(authorization: nil, queryToken: "watch") == nil)
        #expect(access.checkSubscribe(authorization: "Bearer nope", queryToken: nil)?.status == 403)
        #expect(access.checkSubscribe(authorization: nil, queryToken: "nope")?.status == 403)
        #expect(access.checkSubscribe(authorization: nil, queryToken: "")?.status == 403)
        // Subscribe tokens do not publish.
        #expect(access.checkPublish(authorization: "Bearer watch", remoteAddress: "203.0.113.5")?.status == 403)
    }
}

/// How a fan-out spaces its batches: a Redis channel's copy keeps its passes to an eighth of the loop, capped
/// (more loosely when events come fast); an in-process channel adds nothing to its other rules.
@Suite struct ChannelFanoutPacingTests {
    typealias Pacing = ChannelLoopFanout.Pacing

    @Test func aRedisCopySpacesBatchesByWhatTheLastPassCost() {
        let pacing = Pacing.redisCopy
        for rate: UInt64 in [0, 100, 400] {
            #expect(pacing.spacing(passTook: 0, eventsPerSecond: rate) == 0)
            #expect(pacing.spacing(passTook: 100_000, eventsPerSecond: rate) == 800_000)
            #expect(pacing.spacing(passTook: 2_000_000, eventsPerSecond: rate) == 16_000_000)
            // A slow pass (thousands of subscribers, a busy machine) adds no more than the cap.
            #expect(pacing.spacing(passTook: 5_000_001, eventsPerSecond: rate) == 40_000_000)
            #expect(pacing.spacing(passTook: UInt64.max, eventsPerSecond: rate) == 40_000_000)
        }
    }

    @Test func aFastPublisherRaisesTheCapInProportionUpToItsLimit() {
        let pacing = Pacing.redisCopy
        #expect(pacing.spacingCap(eventsPerSecond: 401) == 40_100_000)
        #expect(pacing.spacingCap(eventsPerSecond: 800) == 80_000_000)
        #expect(pacing.spacingCap(eventsPerSecond: 1_200) == 120_000_000)
        #expect(pacing.spacingCap(eventsPerSecond: 50_000) == 120_000_000)
        #expect(pacing.spacingCap(eventsPerSecond: UInt64.max) == 120_000_000)
        // Only the cap moves: a pass that cost little is spaced as at any rate.
        #expect(pacing.spacing(passTook: 2_000_000, eventsPerSecond: 1_000) == 16_000_000)
        #expect(pacing.spacing(passTook: 20_000_000, eventsPerSecond: 800) == 80_000_000)
        #expect(pacing.spacing(passTook: UInt64.max, eventsPerSecond: 1_000) == 100_000_000)
    }

    @Test func theRateIsEventsPerSecondOfTheLastGap() {
        #expect(Pacing.rate(events: 10, overNanoseconds: 25_000_000) == 400)
        #expect(Pacing.rate(events: 1, overNanoseconds: 2_000_000_000) == 0)
        #expect(Pacing.rate(events: 5, overNanoseconds: 0) == 0, "no gap (the first batch): no rate")
        #expect(Pacing.rate(events: UInt64.max, overNanoseconds: 1) == UInt64.max, "no trap")
    }

    @Test func theNextPassWaitsByTheLastPassAndTheRateItCarried() {
        let pacing = Pacing.redisCopy
        let ms: UInt64 = 1_000_000
        // 10 events 25 ms after the pass before: 400/s, the ordinary cap; a 10 ms pass would ask for 80 ms.
        #expect(
            pacing.nextPassNotBefore(passBegan: 100 * ms, previousBegan: 75 * ms, events: 10, now: 110 * ms) == 140 * ms
        )
        // Twice the events in the same gap: 800/s, the cap doubles.
        #expect(
            pacing.nextPassNotBefore(passBegan: 100 * ms, previousBegan: 75 * ms, events: 20, now: 110 * ms) == 180 * ms
        )
        // A short pass is spaced by what it cost, whatever the rate.
        #expect(
            pacing.nextPassNotBefore(passBegan: 100 * ms, previousBegan: 75 * ms, events: 20, now: 101 * ms) == 108 * ms
        )
        // The first pass (no pass before it: the gap is the whole uptime) has no rate to speak of.
        #expect(pacing.nextPassNotBefore(passBegan: 100 * ms, previousBegan: 0, events: 30, now: 110 * ms) == 140 * ms)
        #expect(
            pacing.nextPassNotBefore(passBegan: .max - 1, previousBegan: 0, events: 1, now: .max) == .max,
            "no trap"
        )
        #expect(
            Pacing.inProcess.nextPassNotBefore(passBegan: 100 * ms, previousBegan: 75 * ms, events: 20, now: 110 * ms)
                == 100 * ms
        )
    }

    @Test func anInProcessChannelAddsNoSpacing() {
        let pacing = Pacing.inProcess
        for took: UInt64 in [0, 1_000_000, 50_000_000, UInt64.max] {
            for rate: UInt64 in [0, 1_000, UInt64.max] {
                #expect(pacing.spacing(passTook: took, eventsPerSecond: rate) == 0)
            }
        }
    }

    @Test func onlyCopiesOfRedisChannelsArePacedByCost() {
        let loop = EventLoop(label: "pacing-test")
        let limits = ChannelHistory.Limits(events: 10, bytes: 1024, ageNanoseconds: 60_000_000_000)
        let local = Channel(name: "a", epoch: "e", history: limits, maxSubscribers: 1)
        let copy = Channel(name: "a", epoch: "e", history: limits, maxSubscribers: 1, mirrorsRedis: true)
        #expect(local.makeFanout(on: loop).pacing == .inProcess)
        #expect(copy.makeFanout(on: loop).pacing == .redisCopy)
    }
}
