import Foundation
import TestSupport
import Testing

@testable import Spout

/// Channels over real loopback sockets: fan-out, resume, reset, formats, shutdown and the idle sweep.
@Suite(.offPool) struct ChannelDeliveryTests {
    @Test func everySubscriberGetsEveryEventOnceInIDOrder() async throws {
        let server = try SpoutTestServer()
        let subscribers = try (0..<50).map { _ in try StreamClient.channel("fan", port: server.port) }
        defer { subscribers.forEach { $0.close() } }
        #expect(try server.channelList()["fan"]?.subscribers == 50)

        // 200 events: 100 one by one, then 10 batches of 10.
        let publisher = try ChannelHTTP(port: server.port)
        var ids: [String] = []
        for number in 0..<100 { ids += try publisher.publishIDs("fan", channelBody([number])) }
        for batch in 0..<10 {
            ids += try publisher.publishIDs("fan", channelBody((100 + batch * 10)..<(110 + batch * 10)))
        }
        #expect(ids.count == 200)
        let sequences = ids.compactMap { ChannelEventID($0)?.sequence }
        #expect(sequences == Array(1...200), "ids count the channel's events from 1")
        #expect(Set(ids.map { ChannelEventID($0)?.epoch }).count == 1)

        for (index, subscriber) in subscribers.enumerated() {
            let frames = try subscriber.frames(200)
            #expect(frames.map(\.id) == ids, "subscriber \(index): every id once, in order")
            #expect(numbers(frames) == Array(0..<200), "subscriber \(index): every event's data")
            #expect(frames.allSatisfy { $0.type == "message" })
        }
        #expect(server.counter("spout_channel_events_published_total") == 200)
        #expect(eventually { server.counter("spout_channel_events_delivered_total") == 200 * 50 })
        #expect(try server.metric("spout_channel_subscribers") == 50)
        #expect(server.isHealthy())
        await server.stop()
    }

    /// One loop, 300 subscribers: each batch takes five fan-out slices, and events published meanwhile join
    /// the batch under way for the subscribers not reached yet and come in the next pass for the others.
    @Test func eventsJoiningABatchUnderWayReachEverySubscriberOnceInOrder() async throws {
        let count = 300
        let server = try SpoutTestServer { $0.eventLoops = 1 }
        let subscribers = try (0..<count).map { _ in try StreamClient.channel("join", port: server.port) }
        defer { subscribers.forEach { $0.close() } }
        #expect(try server.channelList()["join"]?.subscribers == count)
        #expect(count > ChannelLoopFanout.sliceSize * 4)

        // 150 events one by one as fast as the answers come (each answered between two slices of a pass, so
        // the next one arrives while that pass is under way), alternately on two connections.
        let first = try ChannelHTTP(port: server.port)
        let second = try ChannelHTTP(port: server.port)
        var ids: [String] = []
        for number in stride(from: 0, to: 150, by: 2) {
            ids += try first.publishIDs("join", channelBody([number]))
            ids += try second.publishIDs("join", channelBody([number + 1]))
        }
        #expect(ids.compactMap { ChannelEventID($0)?.sequence } == Array(1...150))

        for (index, subscriber) in subscribers.enumerated() {
            let frames = try subscriber.frames(150)
            #expect(frames.map(\.id) == ids, "subscriber \(index): every id once, in order")
            #expect(numbers(frames) == Array(0..<150), "subscriber \(index): every event's data")
        }
        #expect(eventually { server.counter("spout_channel_events_delivered_total") == 150 * count })
        #expect(server.isHealthy())
        await server.stop()
    }

    @Test func theSSEFramesAreExact() async throws {
        let server = try SpoutTestServer { $0.sse.retryMilliseconds = 1500 }
        let subscriber = try StreamClient.channel("exact", port: server.port)
        defer { subscriber.close() }
        #expect(subscriber.status == 200)
        #expect(subscriber.header("Content-Type")?.hasPrefix("text/event-stream") == true)
        let publisher = try ChannelHTTP(port: server.port)
        let ids = try publisher.publishIDs(
            "exact",
            #"[{"data": {"a" : [1, "x\ny"]}, "event": "job.done"}, {"data": "line\r\nbreak"}]"#
        )
        let frames = try subscriber.frames(2)
        #expect(
            frames == [
                ChannelFrame(type: "job.done", id: ids[0], data: #"{"a":[1,"x\ny"]}"#),
                ChannelFrame(type: "message", id: ids[1], data: #""line\r\nbreak""#),
            ]
        )
        #expect(subscriber.retry == 1500)
        let text = String(decoding: subscriber.bodyBytes, as: UTF8.self)
        #expect(
            text.hasSuffix(
                "id: \(ids[0])\nevent: job.done\ndata: {\"a\":[1,\"x\\ny\"]}\n\nid: \(ids[1])\ndata: \"line\\r\\nbreak\"\n\n"
            )
        )

        let latest = try server.get("/channels/exact/latest")
        #expect(latest.status == 200)
        #expect(latest.header("Content-Type")?.hasPrefix("application/json") == true)
        #expect(latest.text == #"{"id":"\#(ids[1])","data":"line\r\nbreak"}"#)
        let none = try server.get("/channels/never-published/latest")
        #expect(none.status == 404)
        #expect(none.header("Content-Type") == "application/problem+json")
        await server.stop()
    }

    @Test func anIdleChannelStreamGetsHeartbeatsAndCORSAndTheOperatorsListCountsIt() async throws {
        let server = try SpoutTestServer { $0.sse.heartbeatSeconds = 0.05 }
        let idle = try StreamClient.channel("quiet", port: server.port, headers: ["Origin: http://page.example"])
        defer { idle.close() }
        #expect(idle.header("Access-Control-Allow-Origin") != nil)
        for _ in 0..<100 where idle.comments.isEmpty { try idle.pump() }
        #expect(idle.comments.first == "keep-alive")
        #expect(idle.events.isEmpty)

        let publisher = try ChannelHTTP(port: server.port)
        let ids = try publisher.publishIDs("quiet", channelBody(1...3))
        #expect(numbers(try idle.frames(3)) == [1, 2, 3], "events flow after heartbeats")
        let entry = try #require(try server.channelList()["quiet"])
        #expect(entry.subscribers == 1)
        #expect(entry.historyEvents == 3)
        #expect(entry.lastId == ids[2])
        await server.stop()
    }

    @Test func resumingWhilePublishesRaceTheReplayIsGapFreeAndDuplicateFree() async throws {
        let server = try SpoutTestServer()
        let total = 400
        let publisher = try ChannelHTTP(port: server.port)
        let first = try publisher.publishIDs("race", channelBody(1...20))
        let epoch = try #require(ChannelEventID(first[0])?.epoch)
        let live = try StreamClient.channel("race", port: server.port, headers: ["Last-Event-ID: \(first[19])"])
        defer { live.close() }

        // A second connection publishes the rest, one event per request, while subscribers join.
        let published = TestBox(20)
        let finished = TestSignal()
        let failure = TestBox<String?>(nil)
        let port = server.port
        Thread {
            defer { finished.signal() }
            do {
                let racing = try ChannelHTTP(port: port)
                for number in 21...total {
                    let response = try racing.publish("race", channelBody([number]))
                    guard response.status == 202 else {
                        let text = "\(response)"
                        failure.update { $0 = text }
                        return
                    }
                    published.update { $0 = number }
                }
            } catch {
                failure.update { $0 = "\(error)" }
            }
        }.start()

        // Each joins with the id of whatever was published last when it connected, or an early one.
        var resumed: [(after: Int, client: StreamClient)] = []
        defer { resumed.forEach { $0.client.close() } }
        for round in 0..<30 {
            let after = round % 3 == 0 ? round % 20 + 1 : published.value
            let client = try StreamClient.channel("race", port: port, headers: ["Last-Event-ID: \(epoch)-\(after)"])
            resumed.append((after, client))
        }
        #expect(finished.wait(timeout: .seconds(60)))
        #expect(failure.value == nil)

        let everything = try live.frames(total - 20)
        #expect(numbers(everything) == Array(21...total))
        for (after, client) in resumed {
            let frames = try client.frames(total - after)
            #expect(frames.map(\.type).allSatisfy { $0 == "message" }, "after \(after): no reset")
            #expect(numbers(frames) == Array((after + 1)..<(total + 1)), "after \(after): no gap, no repeat")
            #expect(frames.map(\.sequence) == Array(UInt64(after + 1)..<UInt64(total + 1)))
        }
        // Nothing more is waiting on any of them: a last event arrives next everywhere.
        _ = try publisher.publishIDs("race", channelBody([total + 1]))
        for client in [live] + resumed.map(\.client) {
            #expect(numbers(try client.frames(1)) == [total + 1])
        }
        #expect(server.isHealthy())
        await server.stop()
    }

    @Test func concurrentPublishersAndChurningSubscribersSeeOneGaplessOrder() async throws {
        let server = try SpoutTestServer()
        let port = server.port
        let watcher = try StreamClient.channel("busy", port: port)
        defer { watcher.close() }

        // Four connections publish 100 events each at once; subscribers join (and some leave) meanwhile.
        let publishers = 4
        let perPublisher = 100
        let done = TestBox(0)
        let finished = TestSignal()
        let failures = TestBox<[String]>([])
        for publisher in 0..<publishers {
            Thread {
                do {
                    let http = try ChannelHTTP(port: port)
                    for index in 0..<perPublisher {
                        let body = #"{"data":{"p":\#(publisher),"i":\#(index)}}"#
                        let status = try http.publish("busy", body).status
                        if status != 202 { failures.update { $0.append("status \(status)") } }
                    }
                } catch {
                    let text = "\(error)"
                    failures.update { $0.append(text) }
                }
                if done.update({
                    $0 += 1; return $0
                }) == publishers {
                    finished.signal()
                }
            }.start()
        }
        var joined: [StreamClient] = []
        defer { joined.forEach { $0.close() } }
        for round in 0..<30 {
            let client = try StreamClient.channel("busy", port: port)
            if round % 3 == 0 { client.close() } else { joined.append(client) }
        }
        #expect(finished.wait(timeout: .seconds(60)))
        #expect(failures.value.isEmpty, "\(failures.value)")
        let marker = try ChannelHTTP(port: port).publishIDs("busy", #"{"data":"end"}"#)

        let total = publishers * perPublisher
        let all = try watcher.frames(total + 1)
        #expect(all.map(\.sequence) == Array(1...UInt64(total + 1)), "one order, no gap, no repeat")
        #expect(all.last?.id == marker.first)
        for publisher in 0..<publishers {
            let own = all.compactMap { frame -> Int? in
                guard let object = frame.object, object["p"] as? Int == publisher else { return nil }
                return object["i"] as? Int
            }
            #expect(own == Array(0..<perPublisher), "publisher \(publisher)'s events in the order it sent them")
        }
        for client in joined {
            let frames = try client.frames(until: { $0.id == marker.first }, limit: total + 1)
            let sequences = frames.compactMap(\.sequence)
            #expect(frames.last?.id == marker.first)
            #expect(frames.allSatisfy { $0.type == "message" })
            let first = try #require(sequences.first)
            #expect(sequences == Array(first...UInt64(total + 1)), "live from its join on, without a gap")
        }
        #expect(eventually { (try? server.channelList()["busy"]?.subscribers) == 1 + joined.count })
        #expect(server.isHealthy())
        await server.stop()
    }

    @Test func truncatedStaleAndGarbageIDsGetAResetThenTheWholeHistory() async throws {
        let server = try SpoutTestServer { $0.channels.historyEvents = 5 }
        let publisher = try ChannelHTTP(port: server.port)
        let ids = try publisher.publishIDs("short", channelBody(1...10))
        let epoch = try #require(ChannelEventID(ids[0])?.epoch)
        let oldest = ids[5]

        func resume(_ lastEventID: String, count: Int = 6) throws -> [ChannelFrame] {
            let client = try StreamClient.channel(
                "short",
                port: server.port,
                headers: ["Last-Event-ID: \(lastEventID)"]
            )
            defer { client.close() }
            #expect(client.status == 200)
            return try client.frames(count)
        }
        func expectReset(_ lastEventID: String, reason: String) throws {
            let frames = try resume(lastEventID)
            #expect(frames.first?.type == "reset", "\(lastEventID)")
            #expect(frames.first?.data == #"{"reason":"\#(reason)","oldest":"\#(oldest)"}"#, "\(lastEventID)")
            #expect(numbers(Array(frames.dropFirst())) == Array(6...10), "\(lastEventID): the whole history")
            #expect(frames.dropFirst().map(\.id) == Array(ids[5...]))
        }
        try expectReset(ids[0], reason: "history-truncated")
        try expectReset(ids[3], reason: "history-truncated")
        try expectReset("\(epoch)x-3", reason: "unknown-id")  // another run's epoch
        try expectReset("0-3", reason: "unknown-id")
        try expectReset("\(epoch)-11", reason: "unknown-id")  // from the future
        try expectReset("\(epoch)-9999999999999999999", reason: "unknown-id")
        for garbage in ["hello", "-", "\(epoch)-", "\(epoch)-1x", "\(epoch.uppercased())-7", "%00", "😀"] {
            try expectReset(garbage, reason: "unknown-id")
        }
        // Just before the oldest held: everything after it is held, so no reset.
        #expect(numbers(try resume(ids[4], count: 5)) == Array(6...10))

        // At the newest: nothing replayed; the next event is the first thing sent.
        let current = try StreamClient.channel("short", port: server.port, headers: ["Last-Event-ID: \(ids[9])"])
        defer { current.close() }
        // An empty id (header or query) is no resume point: nothing replayed, no reset.
        let emptyHeader = try StreamClient.channel("short", port: server.port, headers: ["Last-Event-ID: "])
        defer { emptyHeader.close() }
        let emptyQuery = try StreamClient.channel("short", port: server.port, query: "?lastEventId=")
        defer { emptyQuery.close() }
        let next = try publisher.publishIDs("short", channelBody([11]))
        for client in [current, emptyHeader, emptyQuery] {
            #expect(try client.frames(1).map(\.id) == next)
        }
        #expect(server.counter("spout_channel_events_replayed_total") > 0)
        #expect(server.isHealthy())
        await server.stop()
    }

    @Test func theQueryParameterResumesLikeTheHeaderAndTheHeaderWins() async throws {
        let server = try SpoutTestServer()
        let publisher = try ChannelHTTP(port: server.port)
        let ids = try publisher.publishIDs("query", channelBody(1...10))

        let byQuery = try StreamClient.channel("query", port: server.port, query: "?lastEventId=\(ids[6])")
        defer { byQuery.close() }
        let byHeader = try StreamClient.channel("query", port: server.port, headers: ["Last-Event-ID: \(ids[6])"])
        defer { byHeader.close() }
        let both = try StreamClient.channel(
            "query",
            port: server.port,
            query: "?lastEventId=\(ids[1])",
            headers: ["Last-Event-ID: \(ids[8])"]
        )
        defer { both.close() }
        let garbageQuery = try StreamClient.channel("query", port: server.port, query: "?lastEventId=nope")
        defer { garbageQuery.close() }
        _ = try publisher.publishIDs("query", channelBody([11]))

        #expect(numbers(try byQuery.frames(4)) == [8, 9, 10, 11])
        #expect(numbers(try byHeader.frames(4)) == [8, 9, 10, 11])
        #expect(numbers(try both.frames(2)) == [10, 11], "the header wins over the query")
        let reset = try garbageQuery.frames(12)
        #expect(reset.first?.type == "reset")
        #expect(numbers(Array(reset.dropFirst())) == Array(1...11))

        let unknown = try server.get("/channels/query?lastEventID=\(ids[1])")  // the wrong case
        #expect(unknown.status == 400)
        #expect(server.isHealthy())
        await server.stop()
    }

    @Test func ndjsonCarriesTheSameEventsAsLines() async throws {
        let server = try SpoutTestServer { $0.channels.historyEvents = 2 }
        let publisher = try ChannelHTTP(port: server.port)
        let ids = try publisher.publishIDs(
            "lines",
            #"[{"data":1},{"data":2},{"data":{"x":"y"},"event":"t"},{"data":4}]"#
        )

        let byAccept = try StreamClient.channel(
            "lines",
            port: server.port,
            headers: ["Accept: application/x-ndjson", "Last-Event-ID: \(ids[0])"]
        )
        defer { byAccept.close() }
        let byFormat = try StreamClient.channel(
            "lines",
            port: server.port,
            query: "?format=ndjson&lastEventId=\(ids[2])"
        )
        defer { byFormat.close() }
        for client in [byAccept, byFormat] {
            #expect(client.status == 200)
            #expect(client.header("Content-Type")?.hasPrefix("application/x-ndjson") == true)
        }
        let fifth = try publisher.publishIDs("lines", #"{"data":"five"}"#)

        func lines(_ client: StreamClient, _ count: Int) throws -> [String] {
            var found: [String] = []
            for _ in 0..<200 {
                found = String(decoding: client.bodyBytes, as: UTF8.self).split(separator: "\n").map(String.init)
                if found.count >= count { break }
                try client.pump()
            }
            return found
        }
        #expect(
            try lines(byAccept, 4) == [
                #"{"reset":{"reason":"history-truncated","oldest":"\#(ids[2])"}}"#,
                #"{"id":"\#(ids[2])","event":"t","data":{"x":"y"}}"#,
                #"{"id":"\#(ids[3])","data":4}"#,
                #"{"id":"\#(fifth[0])","data":"five"}"#,
            ]
        )
        #expect(try lines(byFormat, 2) == [#"{"id":"\#(ids[3])","data":4}"#, #"{"id":"\#(fifth[0])","data":"five"}"#])
        // Every line is JSON.
        for line in try lines(byAccept, 4) {
            #expect((try? JSONSerialization.jsonObject(with: Data(line.utf8))) is [String: Any], "\(line)")
        }
        #expect(try server.get("/channels/lines?format=xml").status == 400)
        #expect(try server.get("/channels/lines", headers: ["Accept: image/png"]).status == 406)
        #expect(server.isHealthy())
        await server.stop()
    }

    @Test func headAnswersTheHeadAndLeavesNoSubscriber() async throws {
        let server = try SpoutTestServer()
        let http = try ChannelHTTP(port: server.port)
        let head = try http.send("HEAD", "/channels/heads", contentType: nil)
        #expect(head.status == 200)
        #expect(head.header("Content-Type")?.hasPrefix("text/event-stream") == true)
        #expect(head.body.isEmpty)
        #expect(eventually { (try? server.channelList()["heads"]?.subscribers) == 0 })
        #expect(server.channelMetrics.subscribers.value == 0)
        // The connection goes on serving.
        let again = try http.send("GET", "/health", contentType: nil)
        #expect(again.status == 200)
        #expect(try http.send("HEAD", "/channels/heads/latest", contentType: nil).status == 404)
        #expect(server.isHealthy())
        await server.stop()
    }

    @Test func shutdownEndsChannelStreamsWithAnEndEvent() async throws {
        let server = try SpoutTestServer()
        let sse = try StreamClient.channel("bye", port: server.port)
        defer { sse.close() }
        let ndjson = try StreamClient.channel("bye", port: server.port, query: "?format=ndjson")
        defer { ndjson.close() }
        let publisher = try ChannelHTTP(port: server.port)
        let ids = try publisher.publishIDs("bye", channelBody([1]))
        #expect(try sse.frames(1).map(\.id) == ids)
        publisher.close()

        await server.stop()
        let rest = try sse.remainingFrames()
        #expect(rest.map(\.type) == ["end"])
        #expect(rest.first?.data == #"{"reason":"shutdown"}"#)
        let lines = String(decoding: try ndjson.readToEnd(), as: UTF8.self).split(separator: "\n")
        #expect(lines.first == #"{"id":"\#(ids[0])","data":{"n":1}}"#)
        #expect(lines.last?.contains(#""shutdown""#) == true, "\(lines)")
        #expect(lines.count == 2)
    }

    @Test func idleChannelsAreSweptAndBusyOnesKept() async throws {
        // Events live a second (longer under sanitizers): long enough to resume after the last publish below.
        let server = try SpoutTestServer { $0.channels.historySeconds = Double(TestTiming.scale) }
        let publisher = try ChannelHTTP(port: server.port)
        let before = try publisher.publishIDs("idle", channelBody([1]))
        let kept = try StreamClient.channel("kept", port: server.port)
        _ = try publisher.publishIDs("kept", channelBody([1]))
        #expect(try server.channelList()["idle"] != nil)
        #expect(server.channelMetrics.channels.value == 2)

        #expect(eventually { (try? server.channelList()["idle"]) == nil }, "the expired, unwatched channel goes")
        #expect(try server.channelList()["kept"]?.subscribers == 1, "a channel with a subscriber stays")
        #expect(
            eventually { (try? server.channelList()["kept"]?.historyEvents) == 0 },
            "its history expires all the same"
        )
        #expect(try server.get("/channels/idle/latest").status == 404)

        kept.close()
        #expect(eventually { (try? server.channelList().isEmpty) == true })
        #expect(
            eventually { server.channelMetrics.channels.value == 0 && server.channelMetrics.subscribers.value == 0 }
        )

        // A swept channel comes back on the next publish. A client that saw the last event of the swept one
        // resumes with its id and gets every event published since: the new ids are not misread as old ones.
        let after = try publisher.publishIDs("idle", channelBody([2, 3]))
        let oldSequence = try #require(ChannelEventID(before[0])?.sequence)
        #expect(after.allSatisfy { (ChannelEventID($0)?.sequence ?? 0) > oldSequence }, "\(before) then \(after)")
        let resumed = try StreamClient.channel("idle", port: server.port, headers: ["Last-Event-ID: \(before[0])"])
        defer { resumed.close() }
        let frames = try resumed.frames(until: { $0.object?["n"] as? Int == 3 }, limit: 5)
        #expect(numbers(frames.filter { $0.type == "message" }) == [2, 3], "\(frames)")
        #expect(server.isHealthy())
        await server.stop()
    }
}
