import Foundation
import TestSupport
import Testing

@testable import Spout

/// Channels shared by two replicas through one real redis-server (issue 16): delivery across replicas, resuming on
/// another replica, and Redis going away and coming back with or without its data.
@Suite(.offPool, .enabled(if: RedisServer.testsEnabled), .timeLimit(.minutes(3 * TestTiming.scale)))
struct ChannelsRedisReplicaTests {
    @Test func publishedOnEitherReplicaEverySubscriberGetsEveryEventOnceInOneOrderWithTheSameIDs() async throws {
        let redis = try RedisServer.start()
        defer { redis.stop() }
        let a = try await SpoutTestServer.replica(redisPort: redis.port)
        let b = try await SpoutTestServer.replica(redisPort: redis.port)

        let publisherA = try ChannelHTTP(port: a.port)
        let publisherB = try ChannelHTTP(port: b.port)
        defer {
            publisherA.close()
            publisherB.close()
        }
        // Live subscribers, joined before anything was published: when their subscription took effect in Redis is
        // not visible to a client, so each must get an unbroken tail of the events, ending with the last.
        let liveA = try StreamClient.channel("shared", port: a.port)
        let liveB = try StreamClient.channel("shared", port: b.port)
        defer {
            liveA.close()
            liveB.close()
        }
        #expect(liveA.status == 200 && liveB.status == 200)

        let first = try publisherA.publishIDs("shared", channelBody([0]))
        let (gen, firstSeq) = try #require(idParts(first[0]))
        #expect(firstSeq == 1, "a new channel counts from 1")
        #expect(gen.count <= 12)

        // Subscribers that resume after the first event: on B (two) and on A (one). From them on every event
        // must arrive exactly once.
        let onB = try (0..<2).map { _ in
            try StreamClient.channel("shared", port: b.port, headers: ["Last-Event-ID: \(first[0])"])
        }
        let onA = try StreamClient.channel("shared", port: a.port, headers: ["Last-Event-ID: \(first[0])"])
        defer {
            onB.forEach { $0.close() }
            onA.close()
        }

        // 60 events published on A (one by one, then in batches of 10), then 20 on B.
        var ids = first
        for number in 1...30 { ids += try publisherA.publishIDs("shared", channelBody([number])) }
        for batch in 0..<3 {
            ids += try publisherA.publishIDs("shared", channelBody((31 + batch * 10)...(40 + batch * 10)))
        }
        for number in 61...80 { ids += try publisherB.publishIDs("shared", channelBody([number])) }
        #expect(ids.count == 81)
        #expect(ids.compactMap { idParts($0)?.seq } == Array(1...81), "one sequence, whichever replica published")
        #expect(Set(ids.compactMap { idParts($0)?.gen }) == [gen])

        for (index, subscriber) in (onB + [onA]).enumerated() {
            let frames = try subscriber.frames(through: ids.last!)
            #expect(frames.map(\.id) == Array(ids.dropFirst()), "subscriber \(index): every later event once, in order")
            #expect(numbers(frames) == Array(1...80), "subscriber \(index)")
            #expect(frames.allSatisfy { $0.type == "message" }, "subscriber \(index): no reset")
        }
        for (name, live) in [("A", liveA), ("B", liveB)] {
            let frames = try live.frames(through: ids.last!)
            let received = frames.map(\.id)
            #expect(
                !received.isEmpty && ids.hasSuffix(received),
                "live subscriber on \(name): a tail, no gap: \(frames)"
            )
            #expect(frames.allSatisfy { $0.type == "message" })
        }

        // The latest event and the channel list come from Redis on both replicas; subscribers are per replica.
        for (name, replica) in [("A", a), ("B", b)] {
            let latest = try replica.get("/channels/shared/latest")
            #expect(latest.status == 200, "\(name): \(latest)")
            #expect(latest.text == #"{"id":"\#(ids.last!)","data":{"n":80}}"#, "\(name)")
        }
        #expect(try a.channelList()["shared"]?.subscribers == 2)
        #expect(try b.channelList()["shared"]?.subscribers == 3)
        #expect(try a.channelList()["shared"]?.lastId == ids.last)
        let none = try b.get("/channels/never-published/latest")
        #expect(none.status == 404)
        #expect(none.header("Content-Type") == "application/problem+json")
        await a.stop()
        await b.stop()
    }

    @Test func publishersRacingOnTwoReplicasStillMakeOneOrderThatEveryReplicaDelivers() async throws {
        let redis = try RedisServer.start()
        defer { redis.stop() }
        let a = try await SpoutTestServer.replica(redisPort: redis.port)
        let b = try await SpoutTestServer.replica(redisPort: redis.port)
        let start = try ChannelHTTP(port: a.port).publishIDs("race", channelBody([0]))
        let subscribers = try [a, b, a, b].map {
            try StreamClient.channel("race", port: $0.port, headers: ["Last-Event-ID: \(start[0])"])
        }
        defer { subscribers.forEach { $0.close() } }

        // Two threads publish 100 events each, one on A and one on B, at the same time.
        let acknowledged = TestBox<[String]>([])
        let failure = TestBox<String?>(nil)
        let done = TestSignal()
        for (replica, base) in [(a, 1000), (b, 2000)] {
            let port = replica.port
            Thread {
                defer { done.signal() }
                do {
                    let publisher = try ChannelHTTP(port: port)
                    defer { publisher.close() }
                    for number in base..<(base + 100) {
                        let response = try publisher.publish("race", channelBody([number]))
                        guard response.status == 202,
                            let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any],
                            let ids = object["ids"] as? [String]
                        else {
                            let text = "\(response)"
                            failure.update { $0 = text }
                            return
                        }
                        acknowledged.update { $0 += ids }
                    }
                } catch {
                    failure.update { $0 = "\(error)" }
                }
            }.start()
        }
        #expect(done.wait(timeout: .seconds(60)) && done.wait(timeout: .seconds(60)))
        #expect(failure.value == nil)
        let ids = acknowledged.value
        #expect(ids.count == 200)
        let sequences = ids.compactMap { idParts($0)?.seq }.sorted()
        #expect(sequences == Array(2...201), "every acknowledged event has its own sequence, none skipped")
        let last = try #require(ids.max { (idParts($0)?.seq ?? 0) < (idParts($1)?.seq ?? 0) })

        var orders: [[String]] = []
        for subscriber in subscribers {
            let frames = try subscriber.frames(through: last)
            orders.append(frames.map(\.id))
            #expect(Set(frames.map(\.id)) == Set(ids), "every acknowledged event, none other")
            #expect(frames.compactMap(\.sequence) == Array(2...201), "in sequence order")
            // Each publisher's own events keep the order it published them in.
            let fromA = numbers(frames).compactMap { $0 }.filter { $0 < 2000 }
            #expect(fromA == Array(1000..<1100))
        }
        #expect(Set(orders.map { $0.joined(separator: ",") }).count == 1, "one order on every replica")
        await a.stop()
        await b.stop()
    }

    @Test func aSubscriberThatLosesItsReplicaResumesOnTheOtherAndMissesNothing() async throws {
        let redis = try RedisServer.start()
        defer { redis.stop() }
        let a = try await SpoutTestServer.replica(redisPort: redis.port)
        let b = try await SpoutTestServer.replica(redisPort: redis.port)
        let publisherB = try ChannelHTTP(port: b.port)
        defer { publisherB.close() }

        let first = try publisherB.publishIDs("move", channelBody([1]))
        let client = try StreamClient.channel("move", port: a.port, headers: ["Last-Event-ID: \(first[0])"])
        let ids = first + (try publisherB.publishIDs("move", channelBody(2...10)))
        let seen = try client.frames(through: ids.last!)
        #expect(numbers(seen) == Array(2...10))

        // A goes away (a drain: its streams end); events go on being published on B meanwhile.
        await a.stop()
        let ending = try client.remainingFrames()
        #expect(ending.allSatisfy { $0.type != "message" }, "nothing more from A: \(ending)")
        client.close()
        let lastSeen = seen.last!.id
        let whileAway = try publisherB.publishIDs("move", channelBody(11...20))

        // The client comes back on B with the last id it saw.
        let resumed = try StreamClient.channel("move", port: b.port, headers: ["Last-Event-ID: \(lastSeen)"])
        defer { resumed.close() }
        #expect(resumed.status == 200)
        let later = try publisherB.publishIDs("move", channelBody(21...25))
        let frames = try resumed.frames(through: later.last!)
        #expect(frames.map(\.id) == whileAway + later, "every later event exactly once")
        #expect(numbers(frames) == Array(11...25))
        #expect(frames.allSatisfy { $0.type == "message" }, "no reset: the history covers it")

        // A replica started afterwards serves the same history: it lives in Redis.
        let c = try await SpoutTestServer.replica(redisPort: redis.port)
        let fresh = try StreamClient.channel("move", port: c.port, headers: ["Last-Event-ID: \(ids[4])"])
        defer { fresh.close() }
        #expect(numbers(try fresh.frames(through: later.last!)) == Array(6...25))
        await b.stop()
        await c.stop()
    }

    @Test func aReplicaHoldsAFixedNumberOfRedisConnectionsHoweverManySubscribersItServes() async throws {
        let redis = try RedisServer.start()
        defer { redis.stop() }
        let replica = try await SpoutTestServer.replica(redisPort: redis.port)
        /// The replica's connections as Redis lists them, by name.
        func connections() throws -> [String] {
            try redis.command(["CLIENT", "LIST"]).split(separator: "\n").compactMap { line in
                line.split(separator: " ").first { $0.hasPrefix("name=spout-") }.map { String($0.dropFirst(5)) }
            }
        }
        #expect(
            eventually(timeout: redisStateTimeout) {
                replica.redisIsUp(true) && replica.redisIsUp(true, role: "subscribe")
            }
        )
        let before = try connections()
        #expect(before.filter { $0.hasPrefix("spout-follow-") }.count == 2, "\(before)")
        #expect(before.contains { $0.hasPrefix("spout-publish") }, "\(before)")

        // 40 subscribers on 8 channels, and events on every channel.
        let subscribers = try (0..<40).map { try StreamClient.channel("many-\($0 % 8)", port: replica.port) }
        defer { subscribers.forEach { $0.close() } }
        let publisher = try ChannelHTTP(port: replica.port)
        defer { publisher.close() }
        for channel in 0..<8 {
            _ = try publisher.publishIDs("many-\(channel)", channelBody([channel]))
        }
        #expect(eventually { (try? replica.metric("spout_channel_subscribers")) == 40 })
        let after = try connections()
        #expect(after.sorted() == before.sorted(), "the same connections: \(before) then \(after)")
        await replica.stop()
    }

    @Test func deploymentsWithAnotherKeyPrefixShareTheRedisButNotTheChannels() async throws {
        let redis = try RedisServer.start()
        defer { redis.stop() }
        let first = try await SpoutTestServer.replica(redisPort: redis.port, channels: ["redisKeyPrefix": "one:"])
        let second = try await SpoutTestServer.replica(redisPort: redis.port, channels: ["redisKeyPrefix": "two:"])
        let start = try ChannelHTTP(port: second.port).publishIDs("same", channelBody([0]))
        let onSecond = try StreamClient.channel("same", port: second.port, headers: ["Last-Event-ID: \(start[0])"])
        defer { onSecond.close() }

        let ids = try ChannelHTTP(port: first.port).publishIDs("same", channelBody(1...3))
        #expect(ids.compactMap { idParts($0)?.seq } == [1, 2, 3], "counted apart from the other deployment's")
        #expect(try redis.command(["HGET", "one:ch:same:meta", "seq"]) == "3")
        #expect(try redis.command(["HGET", "two:ch:same:meta", "seq"]) == "1")
        #expect(try redis.command(["EXISTS", "spout:ch:same:meta"]) == ":0")
        let mine = try ChannelHTTP(port: second.port).publishIDs("same", channelBody([4]))
        #expect(try onSecond.frames(through: mine[0]).map(\.id) == mine, "nothing of the other deployment's")
        let latest = try second.get("/channels/same/latest")
        #expect(latest.text.contains(mine[0]), "\(latest)")
        await first.stop()
        await second.stop()
    }

    @Test func maxChannelsCountsTheChannelsInRedisWhicheverReplicaMadeThem() async throws {
        let redis = try RedisServer.start()
        defer { redis.stop() }
        let a = try await SpoutTestServer.replica(redisPort: redis.port, channels: ["maxChannels": 2])
        let b = try await SpoutTestServer.replica(redisPort: redis.port, channels: ["maxChannels": 2])
        _ = try ChannelHTTP(port: a.port).publishIDs("first", channelBody([1]))
        _ = try ChannelHTTP(port: b.port).publishIDs("second", channelBody([1]))
        let third = try ChannelHTTP(port: a.port).publish("third", channelBody([1]))
        expectUnavailable(third, "a third channel")
        #expect(third.text.contains("maxChannels"), "\(third)")
        // The channels that exist still take events, on either replica.
        #expect(try ChannelHTTP(port: a.port).publishIDs("second", channelBody([2])).count == 1)
        #expect(try ChannelHTTP(port: b.port).publishIDs("first", channelBody([2])).count == 1)
        let listed = try b.channelList()
        #expect(Set(listed.keys) == ["first", "second"])
        #expect(listed["first"]?.historyEvents == 2)
        await a.stop()
        await b.stop()
    }
}

extension Array where Element: Equatable {
    /// Whether the array ends with `suffix`.
    func hasSuffix(_ suffix: [Element]) -> Bool {
        suffix.count <= count && Array(self[(count - suffix.count)...]) == suffix
    }
}
