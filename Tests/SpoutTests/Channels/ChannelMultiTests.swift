import Foundation
import Glibc
import HTTPServer
import TestSupport
import Testing

@testable import Spout

/// One multi-channel frame (SSE), parsed: its type, the cursor in effect after it, and its data object.
struct MultiFrame: CustomStringConvertible {
    var type: String
    var cursor: String
    var object: [String: Any]

    var channel: String? { object["channel"] as? String }
    var id: String? { object["id"] as? String }
    /// `data.n` of an event published with ``channelBody(_:padding:)``.
    var number: Int? { (object["data"] as? [String: Any])?["n"] as? Int }

    var description: String { "\(type)@\(channel ?? "-"):\(number.map(String.init) ?? "\(object)")" }
}

extension StreamClient {
    /// Opens `GET /subscribe?channel=…` for `channels` (SSE unless the query or headers say otherwise).
    static func multi(
        _ channels: [String],
        port: Int,
        query: String = "",
        headers: [String] = [],
        receiveBufferBytes: Int? = nil
    ) throws -> StreamClient {
        let names = channels.map { "channel=\($0)" }.joined(separator: "&")
        return try StreamClient(
            port: port,
            path: "/subscribe?\(names)\(query)",
            headers: headers,
            receiveBufferBytes: receiveBufferBytes
        )
    }

    /// The next `count` frames, parsed.
    func multiFrames(_ count: Int, timeout: Duration = .seconds(10)) throws -> [MultiFrame] {
        try nextEvents(count, timeout: timeout).map(Self.multiFrame)
    }

    /// The next `count` frames within `within` in all (heartbeats do not extend it); fewer when the time is up.
    func multiFrames(_ count: Int, within: Duration) throws -> [MultiFrame] {
        try nextEvents(count, within: within).map(Self.multiFrame)
    }

    private static func multiFrame(_ event: EventStreamParser.Event) -> MultiFrame {
        let object = (try? JSONSerialization.jsonObject(with: Data(event.data.utf8))) as? [String: Any]
        return MultiFrame(type: event.type, cursor: event.lastEventID, object: object ?? [:])
    }
}

/// `GET /subscribe`: many channels on one stream, the cursor, patterns, the frames and the refusals, over real
/// loopback sockets.
@Suite(.offPool) struct ChannelMultiTests {
    @Test func oneStreamCarriesEveryChannelsEventsNamedAndEachWithTheCursor() async throws {
        let server = try SpoutTestServer()
        let stream = try StreamClient.multi(["a", "b"], port: server.port)
        defer { stream.close() }
        #expect(stream.status == 200)
        #expect(stream.header("Content-Type")?.hasPrefix("text/event-stream") == true)
        let publisher = try ChannelHTTP(port: server.port)
        let a1 = try publisher.publishIDs("a", #"{"data":{"n":1},"event":"note"}"#)[0]
        let b1 = try publisher.publishIDs("b", channelBody([2]))[0]
        let a2 = try publisher.publishIDs("a", channelBody([3]))[0]
        _ = try publisher.publishIDs("c", channelBody([99]))

        // In order within each channel (channels are not ordered against each other).
        let frames = try stream.multiFrames(3)
        #expect(frames.filter { $0.channel == "a" }.map(\.id) == [a1, a2])
        #expect(frames.filter { $0.channel == "a" }.map(\.number) == [1, 3])
        #expect(frames.filter { $0.channel == "a" }.map(\.type) == ["note", "message"])
        #expect(frames.filter { $0.channel == "b" }.map(\.id) == [b1])
        #expect(frames.filter { $0.channel == "b" }.map(\.number) == [2])
        #expect(frames.allSatisfy { $0.cursor.hasPrefix("1.") && $0.cursor != $0.id })
        #expect(Set(frames.map(\.cursor)).count == 3, "each event moves the cursor")
        // The exact frame: the cursor as its id, the channel and the event's own id in its data.
        let text = String(decoding: stream.bodyBytes, as: UTF8.self)
        #expect(
            text.contains(
                "id: \(try #require(frames.first { $0.id == a1 }).cursor)\nevent: note\ndata: {\"channel\":\"a\",\"id\":\"\(a1)\",\"data\":{\"n\":1}}\n\n"
            )
        )
        #expect(try server.channelList()["a"]?.subscribers == 1)
        #expect(try server.channelList()["b"]?.subscribers == 1)
        await server.stop()
    }

    @Test func theCursorResumesEveryChannelWithNoGapAndNoDuplicate() async throws {
        let server = try SpoutTestServer()
        let publisher = try ChannelHTTP(port: server.port)
        var cursor = ""
        do {
            let first = try StreamClient.multi(["a", "b", "quiet"], port: server.port)
            _ = try publisher.publishIDs("a", channelBody([1]))
            _ = try publisher.publishIDs("b", channelBody([2]))
            let frames = try first.multiFrames(2)
            #expect(frames.map(\.number) == [1, 2])
            cursor = try #require(frames.last?.cursor)
            first.close()
        }
        // While it is away: each channel gets events, the quiet one too (it had none when the cursor was made).
        #expect(eventually { (try? server.channelList()["a"]?.subscribers) == 0 })
        _ = try publisher.publishIDs("a", channelBody([3]))
        _ = try publisher.publishIDs("b", channelBody([4, 5]))
        _ = try publisher.publishIDs("quiet", channelBody([6]))
        _ = try publisher.publishIDs("a", channelBody([7]))

        let resumed = try StreamClient.multi(
            ["a", "b", "quiet"],
            port: server.port,
            headers: ["Last-Event-ID: \(cursor)"]
        )
        defer { resumed.close() }
        let replayed = try resumed.multiFrames(5)
        #expect(replayed.allSatisfy { $0.type == "message" }, "no reset: the history covers everything")
        #expect(replayed.filter { $0.channel == "a" }.map(\.number) == [3, 7])
        #expect(replayed.filter { $0.channel == "b" }.map(\.number) == [4, 5])
        #expect(replayed.filter { $0.channel == "quiet" }.map(\.number) == [6])
        // Then live, nothing replayed twice.
        _ = try publisher.publishIDs("b", channelBody([8]))
        let live = try resumed.multiFrames(1)
        #expect(live.map(\.number) == [8])

        // The query parameter resumes the same way (and the cursor of the last event covers all three channels).
        let again = try StreamClient.multi(
            ["a", "b", "quiet"],
            port: server.port,
            query: "&lastEventId=\(try #require(live.last?.cursor))"
        )
        defer { again.close() }
        _ = try publisher.publishIDs("quiet", channelBody([9]))
        #expect(try again.multiFrames(1).map(\.number) == [9], "nothing before 9 came again")
        await server.stop()
    }

    @Test func aCursorThatIsNotOneGetsAResetPerChannelThenTheirHistory() async throws {
        let server = try SpoutTestServer()
        let publisher = try ChannelHTTP(port: server.port)
        _ = try publisher.publishIDs("a", channelBody([1, 2]))
        _ = try publisher.publishIDs("b", channelBody([3]))
        for garbage in ["garbage", "1.zz.AAAAAAAA0-1~", "1..", String(repeating: "x", count: 10_000)] {
            let stream = try StreamClient.multi(["a", "b"], port: server.port, headers: ["Last-Event-ID: \(garbage)"])
            // Two resets (none for the empty cursor), then the three events of the history.
            let frames = try stream.multiFrames(garbage == "1.." ? 3 : 5)
            let resets = frames.filter { $0.type == "reset" }
            if garbage == "1.." {
                // A valid, empty cursor: it says nothing of either channel, so both start from their first event.
                #expect(resets.isEmpty)
            } else {
                #expect(Set(resets.compactMap(\.channel)) == ["a", "b"], "\(garbage.prefix(20))")
                #expect(resets.allSatisfy { $0.object["reason"] as? String == "unknown-id" })
            }
            #expect(frames.filter { $0.channel == "a" && $0.type == "message" }.map(\.number) == [1, 2])
            #expect(frames.filter { $0.channel == "b" && $0.type == "message" }.map(\.number) == [3])
            stream.close()
        }
        #expect(server.isHealthy())
        await server.stop()
    }

    @Test func aPatternFollowsMatchingChannelsIncludingOnesCreatedLater() async throws {
        let server = try SpoutTestServer()
        let publisher = try ChannelHTTP(port: server.port)
        _ = try publisher.publishIDs("news.old", channelBody([1]))
        let stream = try StreamClient.multi(["news.*", "direct"], port: server.port)
        defer { stream.close() }
        #expect(eventually { (try? server.channelList()["news.old"]?.subscribers) == 1 })
        _ = try publisher.publishIDs("news.old", channelBody([2]))
        // Created by this publish, after the subscription began: its first event is not missed.
        _ = try publisher.publishIDs("news.new", channelBody([3, 4]))
        _ = try publisher.publishIDs("sports.x", channelBody([50]))
        _ = try publisher.publishIDs("newsy", channelBody([51]))
        _ = try publisher.publishIDs("direct", channelBody([5]))
        let frames = try stream.multiFrames(4)
        #expect(frames.filter { $0.channel == "news.old" }.map(\.number) == [2], "an existing one: live")
        #expect(frames.filter { $0.channel == "news.new" }.map(\.number) == [3, 4], "a new one: from its start")
        #expect(frames.filter { $0.channel == "direct" }.map(\.number) == [5])
        #expect(try server.channelList()["news.new"]?.subscribers == 1)
        #expect(try server.channelList()["sports.x"]?.subscribers == 0)
        #expect(try server.channelList()["newsy"]?.subscribers == 0)

        // The cursor covers the channel picked up later: a resume after news.new's first event gets its second.
        let cursor = try #require(frames.first { $0.channel == "news.new" }?.cursor)
        stream.close()
        let resumed = try StreamClient.multi(
            ["news.*", "direct"],
            port: server.port,
            headers: ["Last-Event-ID: \(cursor)"]
        )
        defer { resumed.close() }
        let replayed = try resumed.multiFrames(2)
        #expect(
            replayed.map(\.channel) == ["news.new", "direct"] || replayed.map(\.channel) == ["direct", "news.new"]
        )
        #expect(replayed.compactMap(\.number).sorted() == [4, 5])
        await server.stop()
    }

    @Test func ndjsonLinesNameTheChannelAndCarryTheCursor() async throws {
        let server = try SpoutTestServer()
        let stream = try StreamClient.multi(["a"], port: server.port, headers: ["Accept: application/x-ndjson"])
        defer { stream.close() }
        #expect(stream.header("Content-Type")?.hasPrefix("application/x-ndjson") == true)
        let publisher = try ChannelHTTP(port: server.port)
        let id = try publisher.publishIDs("a", #"{"data":[1,{"x":"y"}],"event":"note"}"#)[0]
        let untyped = try publisher.publishIDs("a", #"{"data":2}"#)[0]
        while String(decoding: stream.bodyBytes, as: UTF8.self).split(separator: "\n").count < 2 {
            try stream.pump()
        }
        let lines = String(decoding: stream.bodyBytes, as: UTF8.self).split(separator: "\n").map(String.init)
        let first = try #require(try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
        let cursor = try #require(first["cursor"] as? String)
        #expect(lines[0] == #"{"channel":"a","id":"\#(id)","cursor":"\#(cursor)","event":"note","data":[1,{"x":"y"}]}"#)
        #expect(lines[1].hasPrefix(#"{"channel":"a","id":"\#(untyped)","cursor":"1."#))
        #expect(lines[1].hasSuffix(#"","data":2}"#))

        // A cursor that is not one: a reset line naming the channel.
        let reset = try StreamClient.multi(["a"], port: server.port, query: "&format=ndjson&lastEventId=nope")
        defer { reset.close() }
        while !String(decoding: reset.bodyBytes, as: UTF8.self).contains("\n") { try reset.pump() }
        let line = String(decoding: reset.bodyBytes, as: UTF8.self).split(separator: "\n")[0]
        #expect(line == #"{"reset":{"channel":"a","reason":"unknown-id","oldest":"\#(id)"}}"#)
        await server.stop()
    }

    @Test func theStreamEndsForEveryChannelWithEndShutdown() async throws {
        let server = try SpoutTestServer()
        let stream = try StreamClient.multi(["a", "b"], port: server.port)
        defer { stream.close() }
        #expect(eventually { (try? server.channelList()["b"]?.subscribers) == 1 })
        await server.stop()
        let rest = try stream.remainingEvents()
        #expect(rest.last?.type == "end")
        #expect(rest.last?.data == #"{"reason":"shutdown"}"#)
    }

    @Test func aSlowReaderPastItsBoundIsEndedWithEndOverflow() async throws {
        let server = try SpoutTestServer {
            $0.channels.subscriberBufferEvents = 8
            $0.limits.streamSendBufferBytes = 4096
        }
        let stream = try StreamClient.multi(["fast", "slow"], port: server.port, receiveBufferBytes: 4096)
        defer { stream.close() }
        #expect(eventually { (try? server.channelList()["fast"]?.subscribers) == 1 })
        let publisher = try ChannelHTTP(port: server.port)
        // The reader reads nothing while ~2 MB are published: the socket fills, then the leg's bound.
        for batch in 0..<40 {
            _ = try publisher.publishIDs("fast", channelBody((batch * 10)..<(batch * 10 + 10), padding: 4000))
        }
        #expect(eventually { (try? server.channelList()["fast"]?.subscribers) == 0 }, "both legs left")
        // Gone from the list once the idle sweep drops it (no subscriber, no history).
        #expect(eventually { ((try? server.channelList()["slow"]?.subscribers) ?? 0) == 0 })
        let rest = try stream.remainingEvents()
        #expect(rest.last?.type == "end")
        #expect(rest.last?.data == #"{"reason":"overflow"}"#)
        #expect(server.isHealthy())
        await server.stop()
    }

    @Test func refusalsAreProblems() async throws {
        let server = try SpoutTestServer { $0.channels.maxChannelsPerSubscription = 3 }
        let cases: [(String, String)] = [
            ("/subscribe", "at least one"),
            ("/subscribe?format=sse", "at least one"),
            ("/subscribe?channel=a&channel=b%2Fc", "channel name"),
            ("/subscribe?channel=", "channel name"),
            ("/subscribe?channel=..", "channel name"),
            ("/subscribe?channel=*", "pattern"),
            ("/subscribe?channel=a*b*", "pattern"),
            ("/subscribe?channel=a&channel=b&channel=c&channel=d", "at most 3"),
            ("/subscribe?channel=a&other=1", "unknown parameter"),
            ("/subscribe?channel=a&format=sse&format=sse", "at most once"),
        ]
        for (path, detail) in cases {
            let response = try server.get(path)
            #expect(response.status == 400, "\(path)")
            #expect(response.header("Content-Type") == "application/problem+json", "\(path)")
            #expect(response.text.contains(detail), "\(path): \(response.text)")
        }
        let unacceptable = try server.get("/subscribe?channel=a&format=json")
        #expect(unacceptable.status == 400 || unacceptable.status == 406)
        // Three is the limit, not more: patterns count.
        let three = try StreamClient.multi(["a", "b", "c.*"], port: server.port)
        #expect(three.status == 200)
        three.close()
        #expect(server.isHealthy())
        await server.stop()
    }

    @Test func subscribeTokensGuardTheRoute() async throws {
        let server = try SpoutTestServer { $0.channels.subscribeTokens = ["sesame"] }
        let none = try server.get("/subscribe?channel=a")
        #expect(none.status == 401)
        #expect(none.header("WWW-Authenticate") == #"Bearer realm="spout""#)
        let wrong = try server.get("/subscribe?channel=a&token=nope")
        #expect(wrong.status == 403)
        let good = try StreamClient.multi(["a", "p.*"], port: server.port, query: "&token=sesame")
        #expect(good.status == 200)
        good.close()
        let header = try StreamClient.multi(["a"], port: server.port, headers: ["Authorization: Bearer sesame"])
        #expect(header.status == 200)
        header.close()
        await server.stop()
    }
}

/// ``ChannelCursor``: what it writes, and what it refuses to read.
@Suite struct ChannelCursorTests {
    @Test func itReadsBackWhatItWrites() throws {
        let positions: [(key: UInt64, position: ChannelCursor.Position)] = [
            (ChannelCursor.key(of: "a"), .init(epoch: "mitq0a1c", sequence: 42)),
            (ChannelCursor.key(of: "news.x"), .init(epoch: "0k2j3h4g5f", sequence: UInt64.max)),
            (ChannelCursor.key(of: "b"), .init(epoch: "mitq0a1c", sequence: 0)),
        ]
        var bytes: [UInt8] = []
        ChannelCursor.append(positions, to: &bytes)
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.allSatisfy { $0.isLetter || $0.isNumber || "-_.~".contains($0) })
        #expect(text.hasPrefix("1.mitq0a1c~0k2j3h4g5f."))
        let cursor = try #require(ChannelCursor(text, maxEntries: 3))
        #expect(cursor.position(of: "a") == .some(.init(epoch: "mitq0a1c", sequence: 42)))
        #expect(cursor.position(of: "news.x") == .some(.init(epoch: "0k2j3h4g5f", sequence: UInt64.max)))
        #expect(cursor.position(of: "b") == .some(.init(epoch: "mitq0a1c", sequence: 0)))
        #expect(cursor.position(of: "c") == nil)
        #expect(ChannelCursor(text, maxEntries: 2) == nil, "more entries than allowed")
        #expect(text.utf8.count <= ChannelCursor.maxLength(entries: 3))
    }

    /// The base-36 numbers of a cursor (epoch indices, sequences) are the standard library's digits, at every
    /// change of length and at the ends of the range.
    @Test func itsNumbersAreBase36() {
        var values: [UInt64] = [0, 1, 35, 36, 1_295, 1_296, UInt64.max, UInt64.max - 1]
        var power: UInt64 = 36
        for _ in 2...12 {
            power *= 36
            values += [power - 1, power, power + 1]
        }
        var generator = SystemRandomNumberGenerator()
        values += (0..<1_000).map { _ in
            UInt64.random(in: 0...UInt64.max, using: &generator) >> UInt64.random(in: 0...63)
        }
        for value in values {
            var bytes: [UInt8] = [UInt8(ascii: "x")]
            ChannelCursor.appendBase36(value, to: &bytes)
            #expect(String(decoding: bytes, as: UTF8.self) == "x" + String(value, radix: 36), "\(value)")
        }
    }

    @Test func itIsCompactAndBounded() {
        let positions = (0..<100).map {
            (
                key: ChannelCursor.key(of: "channel-\($0)"),
                position: ChannelCursor.Position(epoch: "mitq0a1c", sequence: 1_000_000)
            )
        }
        var bytes: [UInt8] = []
        ChannelCursor.append(positions, to: &bytes)
        #expect(bytes.count < 1_700, "100 channels in about 15 bytes each")
        #expect(bytes.count <= ChannelCursor.maxLength(entries: 100))
        #expect(ChannelCursor(String(decoding: bytes, as: UTF8.self), maxEntries: 100) != nil)
    }

    @Test func anythingElseIsRefused() {
        let key = { (name: String) -> String in
            var bytes: [UInt8] = []
            ChannelCursor.appendKey(ChannelCursor.key(of: name), to: &bytes)
            return String(decoding: bytes, as: UTF8.self)
        }
        let a = key("a")
        let valid = "1.e." + a + "0-1"
        #expect(ChannelCursor(valid, maxEntries: 10) != nil)
        #expect(ChannelCursor("1..", maxEntries: 10) != nil, "no entries: valid")
        let refused = [
            "", "1", "1.", "2.e." + a + "0-1", "1.e." + a + "1-1", "1.e." + a + "0-", "1.e." + a + "-1",
            "1.e." + a + "00-1", "1.e." + a + "0-01", "1.e." + a + "0-1~", "1.e~f." + a + "0-1", "1.E." + a + "0-1",
            "1.e." + a + "0-" + String(repeating: "z", count: 13), "1.e." + a + "0-1.", "1.e." + "AAAAAAA" + "0-1",
            "1.e." + a + "0-1x!", "1.." + a + "0-1", "1.e..",
            "1." + String(repeating: "e", count: 17) + "." + a + "0-1",
            "1.e." + a + "0-1 ", "1.e." + a + "0-1\u{0}",
        ]
        for text in refused {
            #expect(ChannelCursor(text, maxEntries: 10) == nil, "\(text)")
        }
        #expect(ChannelCursor(String(repeating: "1", count: 1_000_000), maxEntries: 100) == nil)
    }

    /// Over Redis each channel has its own epoch: 2,000 of them need three-digit indexes, and read back.
    @Test func manyEpochsReadBack() throws {
        let positions = (0..<2_000).map {
            (key: ChannelCursor.key(of: "c\($0)"), position: ChannelCursor.Position(epoch: "g\($0)", sequence: 7))
        }
        var bytes: [UInt8] = []
        ChannelCursor.append(positions, to: &bytes)
        #expect(bytes.count <= ChannelCursor.maxLength(entries: 2_000))
        let cursor = try #require(ChannelCursor(String(decoding: bytes, as: UTF8.self), maxEntries: 2_000))
        #expect(cursor.position(of: "c1999") == .some(.init(epoch: "g1999", sequence: 7)))
    }

    @Test func twoEntriesWithOneKeyAreAmbiguousNotEachOthers() throws {
        var bytes: [UInt8] = []
        let key = ChannelCursor.key(of: "a")
        ChannelCursor.append(
            [
                (key: key, position: ChannelCursor.Position(epoch: "e", sequence: 1)),
                (key: key, position: ChannelCursor.Position(epoch: "e", sequence: 2)),
            ],
            to: &bytes
        )
        let cursor = try #require(ChannelCursor(String(decoding: bytes, as: UTF8.self), maxEntries: 10))
        #expect(cursor.position(of: "a") == .some(nil))
    }

    /// ``ChannelCursorText``, kept between moves (in place, or written again), is at every step the text written
    /// whole from the same positions: random moves of 6 channels over 3 epochs, sequences crossing digit counts,
    /// resets (no position) and invalidations.
    @Test func theKeptTextIsTheWholeText() {
        let keys = (0..<6).map { ChannelCursor.key(of: "c\($0)") }
        var positions: [ChannelCursor.Position?] = [nil, .init(epoch: "e1", sequence: 30), nil, nil, nil, nil]
        var kept = ChannelCursorText()
        var generator = SystemRandomNumberGenerator()
        var inPlace = 0
        for step in 0..<5_000 {
            let channel = Int.random(in: 0..<6, using: &generator)
            switch Int.random(in: 0..<20, using: &generator) {
            case 0:
                positions[channel] = nil
                kept.invalidate()
            case 1:
                kept.invalidate()
            case 2:
                let epoch = ["e1", "e2", "e3"][Int.random(in: 0..<3, using: &generator)]
                let moved = ChannelCursor.Position(epoch: epoch, sequence: 1)
                positions[channel] = moved
                kept.moved(channel, to: moved)
            default:
                let old = positions[channel] ?? .init(epoch: "e2", sequence: 0)
                let moved = ChannelCursor.Position(
                    epoch: old.epoch,
                    sequence: old.sequence &+ UInt64.random(in: 1...3, using: &generator)
                )
                let wasCurrent = kept.isCurrent
                positions[channel] = moved
                kept.moved(channel, to: moved)
                if wasCurrent, kept.isCurrent { inPlace += 1 }
            }
            var whole: [UInt8] = []
            ChannelCursor.append(
                zip(keys, positions).compactMap { key, position in position.map { (key: key, position: $0) } },
                to: &whole
            )
            let text = kept.text { zip(keys, positions).map { (key: $0, position: $1) } }
            #expect(text == whole, "step \(step)")
            if text != whole { break }
        }
        #expect(inPlace > 1_000, "most moves are written in place")
    }
}

/// `GET /subscribe` read by real clients: `curl -N` and httpx-sse (Python), over loopback.
@Suite(.offPool) struct ChannelMultiClientTests {
    /// `curl -N` prints the frames as they come; the server's shutdown ends the stream (and curl) with `end`.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/curl")))
    func curlSeesEveryChannelsFrames() async throws {
        let server = try SpoutTestServer()
        let curl = try ChildProcess(
            executable: "/usr/bin/curl",
            arguments: ["-sN", "http://127.0.0.1:\(server.port)/subscribe?channel=a&channel=n.*"],
            standardOutput: .pipe
        )
        #expect(eventually { (try? server.channelList()["a"]?.subscribers) == 1 })
        let publisher = try ChannelHTTP(port: server.port)
        let a = try publisher.publishIDs("a", #"{"data":{"n":1},"event":"note"}"#)[0]
        let n = try publisher.publishIDs("n.x", channelBody([2]))[0]
        #expect(eventually { (try? server.channelList()["n.x"]?.subscribers) == 1 })
        await server.stop()
        let text = String(decoding: try curl.readStandardOutput(), as: UTF8.self)
        _ = curl.wait()
        #expect(text.contains("event: note\ndata: {\"channel\":\"a\",\"id\":\"\(a)\",\"data\":{\"n\":1}}\n\n"))
        #expect(text.contains("data: {\"channel\":\"n.x\",\"id\":\"\(n)\",\"data\":{\"n\":2}}\n\n"))
        #expect(text.hasSuffix("event: end\ndata: {\"reason\":\"shutdown\"}\n\n"))
    }

    /// httpx-sse dispatches each event with the cursor as its id; a second connection with that id as
    /// Last-Event-ID gets only what followed, on every channel.
    @Test(.enabled(if: PythonSSEClients.testsEnabled))
    func httpxSSEResumesWithTheCursor() async throws {
        let server = try SpoutTestServer()
        let publisher = try ChannelHTTP(port: server.port)
        _ = try publisher.publishIDs("a", channelBody([1]))
        _ = try publisher.publishIDs("b", channelBody([2]))
        // From the start of both (an empty cursor names neither), then resumed after the first event read.
        let script = #"""
            import json, sys, httpx, httpx_sse
            url = sys.argv[1]
            seen = []
            with httpx.Client(timeout=20) as client:
                with httpx_sse.connect_sse(client, "GET", url, headers={"Last-Event-ID": "1.."}) as source:
                    for event in source.iter_sse():
                        seen.append([event.id, json.loads(event.data)])
                        break
                with httpx_sse.connect_sse(client, "GET", url, headers={"Last-Event-ID": seen[0][0]}) as source:
                    for event in source.iter_sse():
                        seen.append([event.id, json.loads(event.data)])
                        break
            print(json.dumps(seen))
            """#
        let python = try ChildProcess(
            executable: "/usr/bin/env",
            arguments: ["python3", "-c", script, "http://127.0.0.1:\(server.port)/subscribe?channel=a&channel=b"],
            standardOutput: .pipe,
            standardError: .standardOutput
        )
        let output = try python.readStandardOutput(timeout: .seconds(60))
        _ = python.wait()
        let seen = try #require(
            try JSONSerialization.jsonObject(with: Data(output)) as? [[Any]],
            "\(String(decoding: output, as: UTF8.self))"
        )
        #expect(seen.count == 2)
        let objects = seen.compactMap { $0.last as? [String: Any] }
        #expect(objects.map { $0["channel"] as? String } == ["a", "b"])
        #expect(objects.map { ($0["data"] as? [String: Any])?["n"] as? Int } == [1, 2], "b's event, not a's again")
        #expect(seen.allSatisfy { ($0.first as? String)?.hasPrefix("1.") == true })
        await server.stop()
    }
}

/// `?conflate=true`: a reader that is behind gets the newest event of each type, and gaps counting the others.
@Suite(.offPool) struct ChannelConflationTests {
    /// A server whose subscribers' buffers are large (so nothing overflows) and whose sockets are small (so a
    /// reader that does not read is behind at once).
    private func server() throws -> SpoutTestServer {
        try SpoutTestServer {
            $0.channels.subscriberBufferEvents = 100_000
            $0.channels.subscriberBufferBytes = 64 << 20
            $0.limits.streamSendBufferBytes = 4096
        }
    }

    /// Publishes 200 events alternately of types `cpu` and `mem` (n = 0…199, ~4 KB each) while `stream` reads
    /// nothing, then reads until the last of each type; returns what came: (type, n) per event, and the gaps'
    /// `missed` counts.
    private func publishWhileBehind(
        _ channel: String,
        _ stream: StreamClient,
        _ server: SpoutTestServer
    ) throws -> (events: [(type: String, n: Int)], missed: [Int]) {
        #expect(eventually { (try? server.channelList()[channel]?.subscribers) == 1 })
        let publisher = try ChannelHTTP(port: server.port)
        defer { publisher.close() }
        let pad = String(repeating: "x", count: 4000)
        for n in 0..<200 {
            let type = n % 2 == 0 ? "cpu" : "mem"
            _ = try publisher.publishIDs(channel, #"{"data":{"n":\#(n),"pad":"\#(pad)"},"event":"\#(type)"}"#)
        }
        var events: [(type: String, n: Int)] = []
        var missed: [Int] = []
        var lastSeen: Set<Int> = []
        while lastSeen.count < 2 {
            let frame = try #require(try stream.nextEvents(1).first, "the stream ended")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(frame.data.utf8)) as? [String: Any])
            if frame.type == "gap" {
                missed.append(try #require(object["missed"] as? Int))
                continue
            }
            let data = try #require((object["data"] as? [String: Any]) ?? object)
            let n = try #require(data["n"] as? Int)
            events.append((frame.type, n))
            if n >= 198 { lastSeen.insert(n) }
        }
        return (events, missed)
    }

    @Test(arguments: [true, false])
    func aReaderBehindGetsTheNewestOfEachTypeAndGapsCountingTheRest(multi: Bool) async throws {
        let server = try server()
        let stream =
            multi
            ? try StreamClient.multi(["dash"], port: server.port, query: "&conflate=true", receiveBufferBytes: 4096)
            : try StreamClient.channel("dash", port: server.port, query: "?conflate=true", receiveBufferBytes: 4096)
        defer { stream.close() }
        let (events, missed) = try publishWhileBehind("dash", stream, server)
        #expect(events.count + missed.reduce(0, +) == 200, "every event delivered or counted in a gap")
        // What the sockets held went out; what waited behind them was conflated.
        #expect(!missed.isEmpty && events.count < 200, "\(events.count) delivered")
        for type in ["cpu", "mem"] {
            let numbers = events.filter { $0.type == type }.map(\.n)
            #expect(numbers == numbers.sorted(), "\(type) in order")
            #expect(numbers.allSatisfy { ($0 % 2 == 0) == (type == "cpu") })
        }
        #expect(events.last(where: { $0.type == "cpu" })?.n == 198, "the newest cpu")
        #expect(events.last(where: { $0.type == "mem" })?.n == 199, "the newest mem")
        #expect(try server.get("/subscribe?channel=a&conflate=yes").status == 400)
        #expect(try server.get("/channels/a?conflate=1").status == 400)
        await server.stop()
    }

    @Test func withoutConflationAReaderBehindGetsEveryEvent() async throws {
        let server = try server()
        let stream = try StreamClient.multi(["dash"], port: server.port, receiveBufferBytes: 4096)
        defer { stream.close() }
        let (events, missed) = try publishWhileBehind("dash", stream, server)
        #expect(missed.isEmpty)
        #expect(events.map(\.n) == Array(0..<200))
        await server.stop()
    }
}

/// Presence: `GET /channels/{name}/presence`, `?client=`, and `join` / `leave` frames for `?presence=true`.
@Suite(.offPool) struct ChannelPresenceTests {
    /// `GET /channels/{name}/presence` as (count, clients).
    private func presence(_ server: SpoutTestServer, _ name: String) throws -> (count: Int, clients: [String]) {
        let response = try server.get("/channels/\(name)/presence")
        try #require(response.status == 200, "\(response)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
        #expect(object["channel"] as? String == name)
        return (try #require(object["count"] as? Int), try #require(object["clients"] as? [String]))
    }

    @Test func namedClientsJoinAndLeaveOnceWhateverTheirTabsAndWatchersSeeIt() async throws {
        let server = try SpoutTestServer()
        #expect(try presence(server, "room") == (0, []))
        // A watcher on /subscribe that asked for presence frames, and one on /channels/{name} that did not.
        let watcher = try StreamClient.multi(["room"], port: server.port, query: "&presence=true")
        defer { watcher.close() }
        let plain = try StreamClient.channel("room", port: server.port)
        defer { plain.close() }
        #expect(eventually { (try? self.presence(server, "room").count) == 2 })

        let alice1 = try StreamClient.channel("room", port: server.port, query: "?client=alice")
        let alice2 = try StreamClient.multi(["room", "other"], port: server.port, query: "&client=alice")
        let bob = try StreamClient.channel("room", port: server.port, query: "?client=bob&format=ndjson")
        #expect(eventually { (try? self.presence(server, "room").count) == 5 })
        #expect(try presence(server, "room").clients == ["alice", "bob"])
        #expect(try presence(server, "other").clients == ["alice"])

        bob.close()
        #expect(eventually { (try? self.presence(server, "room").clients) == ["alice"] })
        alice1.close()
        #expect(eventually { (try? self.presence(server, "room").count) == 3 })
        #expect(try presence(server, "room").clients == ["alice"], "alice still has a tab")
        alice2.close()
        #expect(eventually { (try? self.presence(server, "room").clients) == [] })

        let frames = try watcher.multiFrames(4)
        #expect(frames.map(\.type) == ["join", "join", "leave", "leave"])
        #expect(frames.map { $0.object["client"] as? String } == ["alice", "bob", "bob", "alice"])
        #expect(frames.allSatisfy { $0.channel == "room" && $0.object.count == 2 })
        #expect(!String(decoding: watcher.bodyBytes, as: UTF8.self).contains("id: "), "presence frames have no id")

        // The subscriber that did not ask gets none of them: its first frame is the next event.
        let publisher = try ChannelHTTP(port: server.port)
        _ = try publisher.publishIDs("room", channelBody([1]))
        #expect(numbers(try plain.frames(1)) == [1])
        await server.stop()
    }

    @Test func aClientNameIsChecked() async throws {
        let server = try SpoutTestServer()
        for bad in ["", "a%20b", String(repeating: "x", count: 65), "%C3%A9"] {
            #expect(try server.get("/channels/room?client=\(bad)").status == 400, "\(bad)")
            #expect(try server.get("/subscribe?channel=room&client=\(bad)").status == 400, "\(bad)")
        }
        #expect(try server.get("/channels/room?presence=maybe").status == 400)
        #expect(try server.get("/channels/bad%20name/presence").status == 400)
        let fine = try StreamClient.channel("room", port: server.port, query: "?client=a.b_c~d-e@f")
        #expect(fine.status == 200)
        fine.close()
        await server.stop()
    }
}

/// `channels.deadPeerSeconds`: the socket of a subscriber's stream (accepted by the server in this process) is
/// armed with keepalive and `TCP_USER_TIMEOUT`, so a peer gone without a FIN is noticed within the bound.
@Suite(.offPool) struct ChannelDeadPeerTests {
    /// The local and remote ports of socket `fd` (nil when it is not an IPv4 TCP socket).
    private static func ports(_ fd: Int32) -> (local: Int, remote: Int)? {
        func port(_ call: (Int32, UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) -> Int32) -> Int? {
            var address = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let result = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { call(fd, $0, &length) }
            }
            guard result == 0, address.sin_family == sa_family_t(AF_INET) else { return nil }
            return Int(UInt16(bigEndian: address.sin_port))
        }
        guard let local = port(getsockname), let remote = port(getpeername) else { return nil }
        return (local, remote)
    }

    /// The server's end of the connection whose client end is `client`: the descriptor of this process whose
    /// local port is the server's and whose peer is the client's port.
    private static func serverEnd(of client: Int32, serverPort: Int) -> Int32? {
        guard let clientPorts = ports(client) else { return nil }
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        for entry in entries {
            guard let fd = Int32(entry), fd != client, let found = ports(fd) else { continue }
            if found.local == serverPort, found.remote == clientPorts.local { return fd }
        }
        return nil
    }

    @Test func aSubscribersSocketIsArmedWithKeepaliveAndAUserTimeout() async throws {
        let server = try SpoutTestServer { $0.channels.deadPeerSeconds = 9 }
        let stream = try StreamClient.multi(["room"], port: server.port, query: "&client=alice")
        defer { stream.close() }
        #expect(stream.status == 200)
        let fd = try #require(Self.serverEnd(of: stream.client.fd, serverPort: server.port))
        let tcp = Int32(IPPROTO_TCP)
        #expect(DeadPeerDetection.option(fd, SOL_SOCKET, SO_KEEPALIVE) == 1)
        #expect(DeadPeerDetection.option(fd, tcp, TCP_KEEPIDLE) == 3)
        #expect(DeadPeerDetection.option(fd, tcp, TCP_KEEPINTVL) == 1)
        #expect(DeadPeerDetection.option(fd, tcp, TCP_KEEPCNT) == 3)
        // Not 9 s: on Linux the user timeout also cuts a live reader whose window stays shut, which the write-stall
        // timeout (300 s by default) promises to keep; so it is the larger of the two.
        #expect(DeadPeerDetection.option(fd, tcp, DeadPeerDetection.tcpUserTimeout) == 300_000)
        await server.stop()

        let shortStall = try SpoutTestServer {
            $0.channels.deadPeerSeconds = 9
            $0.limits.writeStallTimeoutSeconds = 5
        }
        let other = try StreamClient.multi(["room"], port: shortStall.port)
        defer { other.close() }
        let otherFD = try #require(Self.serverEnd(of: other.client.fd, serverPort: shortStall.port))
        #expect(DeadPeerDetection.option(otherFD, tcp, DeadPeerDetection.tcpUserTimeout) == 9000)
        await shortStall.stop()
    }

    @Test func aPeerHasVanishedOnlyWithDataInFlightAndNoAcknowledgementForTheBound() {
        typealias Seen = DeadPeerDetection.Acknowledgements
        func vanished(_ unacknowledged: UInt32, _ since: UInt32, _ seconds: Int) -> Bool {
            DeadPeerDetection.hasVanished(
                Seen(unacknowledged: unacknowledged, sinceLastMilliseconds: since),
                seconds: seconds
            )
        }
        // Checked an eighth of the bound apart (at least a second), so the check that sees it comes within it.
        #expect(DeadPeerDetection.checkInterval(seconds: 30) == 3_750_000_000)
        #expect(DeadPeerDetection.checkInterval(seconds: 3) == 1_000_000_000)
        #expect(DeadPeerDetection.checkInterval(seconds: 0) == 1_000_000_000)
        #expect(DeadPeerDetection.vanishedAfterMilliseconds(seconds: 30) == 26_250)
        #expect(DeadPeerDetection.vanishedAfterMilliseconds(seconds: 3) == 2_000)
        #expect(DeadPeerDetection.vanishedAfterMilliseconds(seconds: 86_400) == 75_600_000)
        // A reader that stopped reading acknowledged everything (its window is shut): never vanished.
        #expect(!vanished(0, 1_000_000, 30))
        // Data in flight: vanished once nothing was acknowledged for the bound less a check.
        #expect(!vanished(3, 26_249, 30))
        #expect(vanished(3, 26_250, 30))
        #expect(vanished(1, UInt32.max, 3))
    }

    @Test func withZeroTheKernelDefaultsStay() async throws {
        let server = try SpoutTestServer { $0.channels.deadPeerSeconds = 0 }
        let stream = try StreamClient.channel("room", port: server.port)
        defer { stream.close() }
        let fd = try #require(Self.serverEnd(of: stream.client.fd, serverPort: server.port))
        #expect(DeadPeerDetection.option(fd, SOL_SOCKET, SO_KEEPALIVE) == 0)
        #expect(DeadPeerDetection.option(fd, Int32(IPPROTO_TCP), DeadPeerDetection.tcpUserTimeout) == 0)
        await server.stop()
    }

    /// A live reader that stops reading, its receive window shut, is not cut at a short `deadPeerSeconds` (the
    /// documented behaviour: its kernel acknowledges what came and answers the window probes, so nothing stays
    /// unacknowledged and the `TCP_INFO` check sees no vanished peer; the write-stall timeout bounds it instead).
    /// The wait is on the server socket's own state: nothing in flight and no data sent for the bound plus two
    /// checks, so the check has looked at it, shut, more than once; then the reader reads every event.
    @Test func aLiveReaderWithItsWindowShutIsNotCutAtAShortBound() async throws {
        let bound = 3
        let server = try SpoutTestServer {
            $0.channels.deadPeerSeconds = bound
            // Heartbeats queue behind the shut window: data always waits to go.
            $0.sse.heartbeatSeconds = 0.2
        }
        let watcher = try StreamClient.channel("room", port: server.port, query: "?presence=true")
        defer { watcher.close() }
        let reader = try StreamClient.channel(
            "room",
            port: server.port,
            query: "?client=slow",
            receiveBufferBytes: 4096
        )
        defer { reader.close() }
        #expect(reader.status == 200)
        #expect(try watcher.frames(1).map(\.type) == ["join"])
        let fd = try #require(Self.serverEnd(of: reader.client.fd, serverPort: server.port))
        // 100 events of 2 KB: far more than the reader's buffer, within the subscriber's bound (1,024 events, 1 MiB).
        let publisher = try ChannelHTTP(port: server.port)
        defer { publisher.close() }
        for batch in 0..<10 {
            _ = try publisher.publishIDs("room", channelBody(batch * 10..<batch * 10 + 10, padding: 2_000))
        }
        let checks = DeadPeerDetection.checkInterval(seconds: bound) / 1_000_000
        let shutFor = UInt32(bound * 1000) + UInt32(2 * checks)
        #expect(
            eventually(timeout: .seconds(60)) {
                guard let seen = Self.sendState(fd) else { return false }
                return seen.unacknowledged == 0 && seen.sinceLastDataSentMilliseconds >= shutFor
            },
            "the window stays shut, nothing in flight, for the bound and two checks"
        )
        // Still there: the reader reads every event, in order, and the watcher heard no leave.
        let frames = try reader.frames(until: { $0.object?["n"] as? Int == 99 }, timeout: .seconds(30))
        #expect(numbers(frames.filter { $0.type == "message" }) == Array(0..<100), "every event, nothing cut")
        #expect(server.channelMetrics.subscribers.value == 2)
        reader.close()
        // The watcher gets the events too; its only presence frame after the join is the leave, once it closed.
        let watched = try watcher.frames(until: { $0.type == "leave" }, timeout: .seconds(30))
        #expect(watched.filter { $0.type != "message" }.map(\.type) == ["leave"], "the leave comes when it closes")
        #expect(watched.filter { $0.type == "message" }.count == 100)
        await server.stop()
    }

    /// What the kernel says of socket `fd`'s sending: segments in flight and milliseconds since data was last sent.
    private static func sendState(_ fd: Int32) -> (unacknowledged: UInt32, sinceLastDataSentMilliseconds: UInt32)? {
        var info = tcp_info()
        var length = socklen_t(MemoryLayout<tcp_info>.size)
        guard getsockopt(fd, Int32(IPPROTO_TCP), TCP_INFO, &info, &length) == 0 else { return nil }
        return (info.tcpi_unacked, info.tcpi_last_data_sent)
    }
}
