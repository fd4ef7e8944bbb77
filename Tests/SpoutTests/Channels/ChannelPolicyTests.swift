import Foundation
import TestSupport
import Testing

@testable import Spout

/// Slow subscribers (`disconnect` and `drop-oldest`), publish latency beside stalled readers, who may publish
/// and subscribe, and every bad input, over real loopback sockets.
@Suite(.offPool) struct ChannelPolicyTests {
    /// About 4 KiB of data per event, so that a stalled reader's socket buffers fill after a few hundred.
    static let padding = 4_000

    /// Publishes one event at a time (numbers from `start`) until `done` holds; returns the last number.
    static func publishUntil(
        _ publisher: ChannelHTTP,
        _ channel: String,
        from start: Int,
        atMost limit: Int = 20_000,
        _ done: () -> Bool
    ) throws -> Int {
        var number = start
        while number < start + limit {
            #expect(try publisher.publish(channel, channelBody([number], padding: padding)).status == 202)
            if done() { return number }
            number += 1
        }
        Issue.record("\(limit) events published and the condition never held")
        return number
    }

    /// The bound that ends a stalled subscriber: its waiting events, or their bytes.
    @Test(arguments: [(events: 64, bytes: 1 << 20), (events: 1_000_000, bytes: 16_384)])
    func aStalledSubscriberIsDisconnectedThenResumesWithNothingLost(bound: (events: Int, bytes: Int)) async throws {
        let server = try SpoutTestServer {
            $0.channels.subscriberBufferEvents = bound.events
            $0.channels.subscriberBufferBytes = bound.bytes
            $0.channels.historyEvents = 100_000
            $0.channels.historyBytes = 1 << 30
        }
        let stalled = try StreamClient.channel("slow", port: server.port, receiveBufferBytes: 4096)
        defer { stalled.close() }
        let publisher = try ChannelHTTP(port: server.port)
        let last = try Self.publishUntil(publisher, "slow", from: 1) {
            server.counter("spout_channel_overflow_disconnects_total") == 1
        }
        print("the stalled subscriber overflowed after \(last) events of \(Self.padding) bytes")
        #expect(try server.metric("spout_channel_overflow_disconnects_total") == 1)
        #expect(eventually { server.channelMetrics.subscribers.value == 0 }, "it left the channel")
        // More events while it is away.
        for number in (last + 1)...(last + 20) {
            #expect(try publisher.publish("slow", channelBody([number], padding: Self.padding)).status == 202)
        }

        // What reached its socket, then the end frame saying why.
        let received = try stalled.remainingFrames()
        let end = try #require(received.last)
        #expect(end.type == "end")
        #expect(end.data == #"{"reason":"overflow"}"#)
        let events = Array(received.dropLast())
        #expect(numbers(events) == Array(1..<(events.count + 1)).map { $0 }, "a prefix, in order")
        #expect(events.count < last, "it really fell behind (\(events.count) of \(last))")

        // Resuming with its last id gets exactly the rest.
        let lastID = try #require(events.last?.id)
        let resumed = try StreamClient.channel("slow", port: server.port, headers: ["Last-Event-ID: \(lastID)"])
        defer { resumed.close() }
        let rest = try resumed.frames(last + 20 - events.count)
        #expect(rest.allSatisfy { $0.type == "message" }, "no reset: the history covers it")
        #expect(numbers(events + rest) == Array(1...(last + 20)), "every event once")
        #expect(server.isHealthy())
        await server.stop()
    }

    @Test func dropOldestSendsAGapWithTheMissedCount() async throws {
        let server = try SpoutTestServer {
            $0.channels.subscriberBufferEvents = 8
            $0.channels.overflow = .dropOldest
        }
        let stalled = try StreamClient.channel("gappy", port: server.port, receiveBufferBytes: 4096)
        defer { stalled.close() }
        let publisher = try ChannelHTTP(port: server.port)
        let last = try Self.publishUntil(publisher, "gappy", from: 1) {
            server.counter("spout_channel_events_dropped_total") >= 50
        }
        #expect(server.counter("spout_channel_overflow_disconnects_total") == 0)
        #expect(server.channelMetrics.subscribers.value == 1, "still subscribed")

        let frames = try stalled.frames(until: { $0.object?["n"] as? Int == last })
        #expect(frames.last.flatMap { $0.object?["n"] as? Int } == last, "the newest event arrives")
        // Walk the stream: every event follows the previous one, or a gap says exactly how many were skipped.
        var expected = 1
        var gaps = 0
        var missedTotal = 0
        var previousID: String?
        for frame in frames {
            if frame.type == "gap" {
                let object = try #require(frame.object)
                let missed = try #require(object["missed"] as? Int)
                #expect(object["after"] as? String == previousID, "the gap names the last id delivered")
                #expect(missed > 0)
                expected += missed
                missedTotal += missed
                gaps += 1
            } else {
                #expect(frame.object?["n"] as? Int == expected, "\(frame)")
                #expect(frame.sequence == UInt64(expected))
                previousID = frame.id
                expected += 1
            }
        }
        #expect(gaps >= 1)
        #expect(
            missedTotal == server.counter("spout_channel_events_dropped_total"),
            "the gaps account for every dropped event"
        )
        #expect(expected == last + 1)
        #expect(server.isHealthy())
        await server.stop()
    }

    @Test func publishLatencyDoesNotDependOnStalledSubscribers() async throws {
        let server = try SpoutTestServer {
            $0.channels.subscriberBufferEvents = 16
            $0.channels.overflow = .dropOldest
        }
        let publisher = try ChannelHTTP(port: server.port)
        let clock = ContinuousClock()
        let padding = 16_000
        var number = 0
        func latencies(_ count: Int) throws -> [Duration] {
            try (0..<count).map { _ in
                number += 1
                let began = clock.now
                let status = try publisher.publish("hot", channelBody([number], padding: padding)).status
                let took = clock.now - began
                #expect(status == 202)
                return took
            }
        }
        func median(_ values: [Duration]) -> Duration { values.sorted()[values.count / 2] }
        _ = try latencies(100)  // warm up
        let baseline = try latencies(300)

        let stalled = try (0..<100).map { _ in
            try StreamClient.channel("hot", port: server.port, receiveBufferBytes: 4096)
        }
        defer { stalled.forEach { $0.close() } }
        #expect(try server.channelList()["hot"]?.subscribers == 100)
        // Fill their sockets and buffers until events are being dropped for them, then measure.
        for _ in 0..<5_000 {
            if server.counter("spout_channel_events_dropped_total") >= 1_000 { break }
            _ = try latencies(10)
        }
        let droppedBefore = server.counter("spout_channel_events_dropped_total")
        #expect(droppedBefore >= 1_000, "the subscribers really are stalled")
        let loaded = try latencies(300)
        let droppedDuring = server.counter("spout_channel_events_dropped_total") - droppedBefore

        print(
            "channel publish latency median: \(median(baseline)) alone, \(median(loaded)) beside 100 stalled "
                + "subscribers (\(droppedDuring) events dropped for them meanwhile, \(number) published)"
        )
        #expect(droppedDuring >= 300 * 50, "most of the 100 stayed stalled throughout")
        #expect(try server.channelList()["hot"]?.subscribers == 100)
        // Generous: the same order of magnitude, on a machine shared with other work.
        #expect(median(loaded) < median(baseline) * 5, "median \(median(loaded)) vs \(median(baseline))")
        #expect(server.isHealthy())
        await server.stop()
    }

    // MARK: Who may publish and subscribe

    @Test func withoutTokensLoopbackPublishes() async throws {
        let server = try SpoutTestServer()
        let http = try ChannelHTTP(port: server.port)
        #expect(try http.publish("open", channelBody([1])).status == 202)
        #expect(try http.publish("open", channelBody([2]), headers: ["Authorization: Bearer whatever"]).status == 202)
        #expect(try http.send("GET", "/channels", contentType: nil).status == 200)
        #expect(try http.send("GET", "/channels/open/latest", contentType: nil).status == 200)
        await server.stop()
    }

    @Test func publishTokensDecide() async throws {
        let server = try SpoutTestServer { $0.channels.publishTokens = ["pub-one", "pub-two"] }
        let http = try ChannelHTTP(port: server.port)
        let watcher = try StreamClient.channel("guarded", port: server.port)
        defer { watcher.close() }

        let none = try http.publish("guarded", channelBody([1]))
        #expect(none.status == 401)
        #expect(none.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)
        #expect(none.header("Content-Type") == "application/problem+json")
        for wrong in ["Bearer pub-three", "Bearer pub-", "Bearer PUB-ONE", "Bearer pub-onex", "Bearer pub-one,pub-two"]
        {
            let response = try http.publish("guarded", channelBody([1]), headers: ["Authorization: \(wrong)"])
            #expect(response.status == 403, "\(wrong)")
            #expect(response.header("Content-Type") == "application/problem+json")
        }
        #expect(
            try http.publish("guarded", channelBody([1]), headers: ["Authorization: Basic cHViLW9uZTo="]).status == 401
        )
        #expect(try http.publish("guarded", channelBody([2]), headers: ["Authorization: Bearer pub-two"]).status == 202)
        #expect(try http.publish("guarded", channelBody([3]), headers: ["Authorization: bearer pub-one"]).status == 202)
        // Only the accepted ones went out.
        #expect(numbers(try watcher.frames(2)) == [2, 3])
        // The operators' list takes the same rule.
        #expect(try http.send("GET", "/channels", contentType: nil).status == 401)
        #expect(
            try http.send("GET", "/channels", headers: ["Authorization: Bearer nope"], contentType: nil).status == 403
        )
        #expect(try server.channelList(headers: ["Authorization: Bearer pub-one"])["guarded"] != nil)
        // Subscribing is still open.
        #expect(try server.get("/channels/guarded/latest").status == 200)
        #expect(server.isHealthy())
        await server.stop()
    }

    @Test func subscribeTokensByHeaderOrQuery() async throws {
        let server = try SpoutTestServer { $0.channels.subscribeTokens = ["watch"] }
        let http = try ChannelHTTP(port: server.port)
        _ = try http.publishIDs("private", channelBody([1]))

        let none = try server.get("/channels/private")
        #expect(none.status == 401)
        #expect(none.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)
        // A wrong token with letters past `v` and a `-`: no request id (base 32, `0-9a-v`), trace id or time in
        // the log can spell it, so finding it there can only mean it leaked (`peek` alone is a possible id).
        let wrong = "peek-xyz"
        #expect(try server.get("/channels/private", headers: ["Authorization: Bearer \(wrong)"]).status == 403)
        #expect(try server.get("/channels/private?token=\(wrong)").status == 403)
        // The request log keeps the parameter's name, not the token.
        #expect(eventually { server.log.lines.contains { $0.contains("token=REDACTED") } })
        #expect(!server.log.lines.contains { $0.contains(wrong) })
        #expect(try server.get("/channels/private/latest").status == 401)
        #expect(try server.get("/channels/private/latest?token=watch").status == 200)

        let byHeader = try StreamClient.channel(
            "private",
            port: server.port,
            headers: ["Authorization: Bearer watch", "Last-Event-ID: nope"]
        )
        defer { byHeader.close() }
        let byQuery = try StreamClient.channel("private", port: server.port, query: "?token=watch&lastEventId=nope")
        defer { byQuery.close() }
        for client in [byHeader, byQuery] {
            #expect(client.status == 200)
            #expect(numbers(Array(try client.frames(2).dropFirst())) == [1], "reset, then the history")
        }
        #expect(server.channelMetrics.subscribers.value == 2, "the refused ones never joined")
        #expect(server.isHealthy())
        await server.stop()
    }

    // MARK: Bad input

    @Test func everyBadInputIsAProblemAndNothingIsHalfPublished() async throws {
        let server = try SpoutTestServer {
            $0.limits.maxBodyBytes = 2_048
            $0.channels.maxEventBytes = 64
        }
        let http = try ChannelHTTP(port: server.port)
        let first = try http.publishIDs("input", channelBody([1]))
        let watcher = try StreamClient.channel("input", port: server.port, headers: ["Last-Event-ID: \(first[0])"])
        defer { watcher.close() }
        let latest = try server.get("/channels/input/latest").text

        func refused(
            _ expected: Int,
            _ what: String,
            _ send: () throws -> LoopbackClient.Response
        ) throws -> LoopbackClient.Response {
            let response = try send()
            #expect(response.status == expected, "\(what): \(response)")
            #expect(response.header("Content-Type") == "application/problem+json", "\(what)")
            let problem = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
            #expect(problem?["status"] as? Int == expected, "\(what)")
            #expect((problem?["detail"] as? String)?.isEmpty == false, "\(what): the cause is named")
            #expect(server.isHealthy(), "\(what): still serving")
            #expect(try server.get("/channels/input/latest").text == latest, "\(what): nothing published")
            return response
        }
        func post(_ body: String, contentType: String? = "application/json") -> () throws -> LoopbackClient.Response {
            { try ChannelHTTP(port: server.port).publish("input", body, contentType: contentType) }
        }

        _ = try refused(400, "invalid JSON", post(#"{"data": [1, 2"#))
        _ = try refused(400, "trailing garbage", post(#"{"data":1} x"#))
        _ = try refused(400, "missing data", post(#"{"event":"x"}"#))
        _ = try refused(400, "unknown member", post(#"{"data":1,"extra":true}"#))
        _ = try refused(400, "deep nesting", post(#"{"data":"# + String(repeating: "[", count: 1_000)))
        _ = try refused(400, "a bad batch", post(#"[{"data":2},{"data":3},{"data":4,"event":""}]"#))
        _ = try refused(400, "a batch with one item missing data", post(#"[{"data":2},{}]"#))
        _ = try refused(
            413,
            "data over maxEventBytes",
            post(#"{"data":""# + String(repeating: "y", count: 100) + #""}"#)
        )
        _ = try refused(
            413,
            "a batch with one event over maxEventBytes",
            post(#"[{"data":2},{"data":""# + String(repeating: "y", count: 100) + #""}]"#)
        )
        // The HTTP server refuses a body over `limits.maxBodyBytes` before any route sees the request: a 413 and
        // the connection closed, a problem like the route's own.
        let tooLarge = try ChannelHTTP(port: server.port).publish("input", channelBody(0..<200))
        #expect(tooLarge.status == 413)
        #expect(tooLarge.header("Content-Type") == "application/problem+json")
        #expect(tooLarge.text.contains(#""type":"/problems/content-too-large""#), "\(tooLarge)")
        #expect(server.isHealthy())
        #expect(try server.get("/channels/input/latest").text == latest)
        _ = try refused(415, "text/plain", post(#"{"data":1}"#, contentType: "text/plain"))
        _ = try refused(415, "no content type", post(#"{"data":1}"#, contentType: nil))
        _ = try refused(415, "JSON lookalike", post(#"{"data":1}"#, contentType: "application/jsonx"))
        _ = try refused(400, "invalid UTF-8") {
            try ChannelHTTP(port: server.port).send(
                "POST",
                "/channels/input/events",
                body: Array(#"{"data":""#.utf8) + [0xC3, 0x28] + Array(#""}"#.utf8)
            )
        }
        // A PUT, POST or PATCH with a (small) body to a path of other methods is read and answered 405, as a
        // client that sends one expects; bodiless methods with a body get the server's 413 before routing.
        let put = try refused(405, "PUT on events") {
            try ChannelHTTP(port: server.port).send("PUT", "/channels/input/events", body: Array(#"{"data":1}"#.utf8))
        }
        #expect(put.header("Allow")?.contains("POST") == true, "\(put)")
        let getEvents = try refused(405, "GET on events") {
            try ChannelHTTP(port: server.port).send("GET", "/channels/input/events", contentType: nil)
        }
        #expect(getEvents.header("Allow")?.contains("POST") == true)
        let delete = try refused(405, "DELETE on a channel") {
            try ChannelHTTP(port: server.port).send("DELETE", "/channels/input", contentType: nil)
        }
        #expect(delete.header("Allow")?.contains("GET") == true)
        let postChannel = try refused(405, "POST on a channel") {
            try ChannelHTTP(port: server.port).send("POST", "/channels/input", body: Array(#"{"data":1}"#.utf8))
        }
        #expect(postChannel.header("Allow")?.contains("GET") == true)
        for name in ["a%20b", "a*b", "%C3%A9", String(repeating: "n", count: 129), "a%2Fb", "..%00"] {
            _ = try refused(400, "subscribe to \(name)") {
                try ChannelHTTP(port: server.port).send("GET", "/channels/\(name)", contentType: nil)
            }
            _ = try refused(400, "publish to \(name)") {
                try ChannelHTTP(port: server.port).send(
                    "POST",
                    "/channels/\(name)/events",
                    body: Array(#"{"data":1}"#.utf8)
                )
            }
            _ = try refused(400, "latest of \(name)") {
                try ChannelHTTP(port: server.port).send("GET", "/channels/\(name)/latest", contentType: nil)
            }
        }
        _ = try refused(400, "an unknown query parameter") {
            try ChannelHTTP(port: server.port).send(
                "POST",
                "/channels/input/events?x=1",
                body: Array(#"{"data":1}"#.utf8)
            )
        }
        // The longest name is fine.
        #expect(try http.publish(String(repeating: "n", count: 128), channelBody([9])).status == 202)

        // The subscriber saw none of it: the next event after the refusals is the next one published.
        let next = try http.publishIDs("input", channelBody([5]))
        let frames = try watcher.frames(1)
        #expect(frames.map(\.id) == next)
        #expect(numbers(frames) == [5])
        #expect(next.first.flatMap { ChannelEventID($0)?.sequence } == 2, "no id was spent on a refusal")
        await server.stop()
    }

    @Test func tooManyChannelsOrSubscribersIs503WithRetryAfter() async throws {
        let server = try SpoutTestServer {
            $0.channels.maxChannels = 2
            $0.channels.maxSubscribersPerChannel = 2
        }
        let http = try ChannelHTTP(port: server.port)
        _ = try http.publishIDs("one", channelBody([1]))
        let two = try StreamClient.channel("two", port: server.port)
        defer { two.close() }
        let twoAgain = try StreamClient.channel("two", port: server.port)
        defer { twoAgain.close() }

        func expectUnavailable(_ response: LoopbackClient.Response, _ what: String) {
            #expect(response.status == 503, "\(what): \(response)")
            #expect(response.header("Retry-After") != nil, "\(what)")
            #expect(response.header("Content-Type") == "application/problem+json", "\(what)")
            #expect(server.isHealthy(), "\(what)")
        }
        expectUnavailable(try http.publish("three", channelBody([1])), "publishing to a third channel")
        expectUnavailable(try server.get("/channels/three"), "subscribing to a third channel")
        expectUnavailable(try server.get("/channels/two"), "a third subscriber")
        #expect(try server.get("/channels/three/latest").status == 404, "latest creates no channel")
        #expect(Set(try server.channelList().keys) == ["one", "two"])
        #expect(server.channelMetrics.subscribers.value == 2)

        // The existing channels keep working, and a freed slot is taken again.
        #expect(try http.publish("one", channelBody([2])).status == 202)
        #expect(try http.publish("two", channelBody([3])).status == 202)
        #expect(numbers(try two.frames(1)) == [3])
        twoAgain.close()
        #expect(eventually { server.channelMetrics.subscribers.value == 1 })
        let third = try StreamClient.channel("two", port: server.port)
        defer { third.close() }
        #expect(third.status == 200)
        await server.stop()
    }
}
