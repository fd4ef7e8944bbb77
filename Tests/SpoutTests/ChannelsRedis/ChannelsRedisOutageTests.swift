import Foundation
import TestSupport
import Testing

@testable import Spout

/// Redis killed under two replicas with open streams: publishes are refused, streams stay open with their
/// heartbeats, and when Redis comes back they carry on (with its data) or reset (without it). Also `/ready` and the
/// Redis metrics across an outage.
@Suite(.offPool, .enabled(if: RedisServer.testsEnabled), .timeLimit(.minutes(3 * TestTiming.scale)))
struct ChannelsRedisOutageTests {
    /// Two replicas with 50 ms heartbeats and a subscriber on each that has seen events 1…5 of `channel`.
    private func replicasWithSubscribers(_ redis: RedisServer, channel: String) async throws -> (
        a: SpoutTestServer, b: SpoutTestServer, subscribers: [StreamClient], ids: [String]
    ) {
        let a = try await SpoutTestServer.replica(redisPort: redis.port) { $0.sse.heartbeatSeconds = 0.05 }
        let b = try await SpoutTestServer.replica(redisPort: redis.port) { $0.sse.heartbeatSeconds = 0.05 }
        let publisher = try ChannelHTTP(port: a.port)
        defer { publisher.close() }
        let first = try publisher.publishIDs(channel, channelBody([1]))
        let subscribers = try [a, b].map {
            try StreamClient.channel(channel, port: $0.port, headers: ["Last-Event-ID: \(first[0])"])
        }
        let ids = first + (try publisher.publishIDs(channel, channelBody(2...5)))
        for subscriber in subscribers {
            #expect(numbers(try subscriber.frames(through: ids.last!)) == Array(2...5))
        }
        return (a, b, subscribers, ids)
    }

    @Test func whileRedisIsDownPublishesAreRefusedAndStreamsKeepTheirHeartbeatsThenCarryOnWithoutAGap()
        async throws
    {
        let redis = try RedisServer.start()
        defer { redis.stop() }
        let (a, b, subscribers, ids) = try await replicasWithSubscribers(redis, channel: "outage")
        defer { subscribers.forEach { $0.close() } }
        let (gen, _) = try #require(idParts(ids[0]))

        try redis.kill(keepingData: true)
        // Publishes on either replica: 503 problem+json with Retry-After, each within the wait (a command to a
        // dead socket fails, or times out).
        for (index, replica) in [a, b, a, b].enumerated() {
            let publisher = try ChannelHTTP(port: replica.port)
            defer { publisher.close() }
            let response = try publisher.send(
                "POST",
                "/channels/outage/events",
                body: Array(channelBody([100 + index]).utf8),
                timeout: .seconds(30)
            )
            expectUnavailable(response, "publish \(index) while Redis is down")
        }
        // The streams stay open and keep their heartbeats while Redis is away.
        for (index, subscriber) in subscribers.enumerated() {
            #expect(subscriber.awaitComments(3), "subscriber \(index): heartbeats while Redis is down")
            #expect(!subscriber.bodyEnded, "subscriber \(index): the stream stays open")
            #expect(subscriber.events.count == 4, "subscriber \(index): nothing new: \(subscriber.events)")
        }
        #expect(a.isHealthy() && b.isHealthy())
        // Operators read it in the log too: one warning per connection that went away, not one per attempt.
        let warnings = { (replica: SpoutTestServer) in
            replica.events.lines.filter { $0.contains(#""event":"redis_unavailable""#) }
        }
        #expect(eventually(timeout: redisStateTimeout) { !warnings(a).isEmpty && !warnings(b).isEmpty })
        #expect(warnings(a).allSatisfy { $0.contains(#""level":"warn""#) })

        let restarted = try redis.restarted()
        defer { restarted.stop() }
        // As soon as B can publish, whether or not A has subscribed again: A catches up from the history.
        #expect(eventually(timeout: redisStateTimeout) { b.redisIsUp(true) })
        let connectedLines = { (replica: SpoutTestServer) in
            replica.events.lines.filter { $0.contains(#""event":"redis_connected""#) }.count
        }
        // Every connection logged its first connect; B's publishers logged coming back.
        #expect(eventually(timeout: redisStateTimeout) { connectedLines(b) > 4 })
        #expect(warnings(b).count <= 4, "at most one warning per connection (2 publishers, 2 followers)")

        // Published on B after the restart: both streams get exactly these, numbered on from 5 in the same
        // generation; the refused publishes never appear.
        let publisher = try ChannelHTTP(port: b.port)
        defer { publisher.close() }
        let after = try publisher.publishIDs("outage", channelBody(6...10))
        #expect(after.compactMap { idParts($0)?.gen } == Array(repeating: gen, count: 5))
        #expect(after.compactMap { idParts($0)?.seq } == Array(6...10), "the refused publishes took no sequence")
        for (index, subscriber) in subscribers.enumerated() {
            let frames = try subscriber.frames(through: after.last!, timeout: redisStateTimeout)
            #expect(frames.map(\.id) == after, "subscriber \(index): no gap, no duplicate, no refused event")
            #expect(frames.allSatisfy { $0.type == "message" }, "subscriber \(index): no reset: \(frames)")
        }
        // A newcomer resuming from the first event reads the kept history: 2…10, not the refused ones.
        let newcomer = try StreamClient.channel("outage", port: a.port, headers: ["Last-Event-ID: \(ids[0])"])
        defer { newcomer.close() }
        #expect(numbers(try newcomer.frames(through: after.last!)) == Array(2...10))
        #expect(try restarted.command(["XLEN", "spout:ch:outage:events"]) == ":10")
        await a.stop()
        await b.stop()
    }

    @Test func aReplicaCutOffFromRedisCatchesUpWithWhatTheOtherPublishedMeanwhile() async throws {
        let redis = try RedisServer.start()
        defer { redis.stop() }
        let link = try RedisLinkProxy(targetPort: redis.port)
        defer { link.stop() }
        let a = try await SpoutTestServer.replica(redisPort: link.port) { $0.sse.heartbeatSeconds = 0.05 }
        let b = try await SpoutTestServer.replica(redisPort: redis.port) { $0.sse.heartbeatSeconds = 0.05 }
        let publisherA = try ChannelHTTP(port: a.port)
        let publisherB = try ChannelHTTP(port: b.port)
        defer {
            publisherA.close()
            publisherB.close()
        }
        let first = try publisherB.publishIDs("apart", channelBody([1]))
        let onA = try StreamClient.channel("apart", port: a.port, headers: ["Last-Event-ID: \(first[0])"])
        let onB = try StreamClient.channel("apart", port: b.port, headers: ["Last-Event-ID: \(first[0])"])
        defer {
            onA.close()
            onB.close()
        }
        let before = try publisherB.publishIDs("apart", channelBody(2...5))
        #expect(try onA.frames(through: before.last!).map(\.id) == before)
        #expect(try onB.frames(through: before.last!).map(\.id) == before)

        // A loses Redis; B does not.
        #expect(link.cut())
        #expect(eventually(timeout: redisStateTimeout) { a.redisIsUp(false) && a.redisIsUp(false, role: "subscribe") })
        expectUnavailable(try publisherA.publish("apart", channelBody([100])), "publish on the replica cut off")
        let meanwhile = try publisherB.publishIDs("apart", channelBody(6...10))
        #expect(try onB.frames(through: meanwhile.last!).map(\.id) == meanwhile)
        #expect(onA.awaitComments(3), "A's stream keeps its heartbeats")
        #expect(
            onA.events.count == 4 && !onA.bodyEnded,
            "nothing reaches A meanwhile: \(onA.events), proxy accepted \(link.accepted), \(a.labelledSamples("spout_redis_up")) \(a.labelledSamples("spout_redis_reconnects_total"))"
        )

        // A gets Redis back: its subscriber catches up from the history, then goes on live.
        link.restore()
        let caughtUp = try onA.frames(through: meanwhile.last!, timeout: redisStateTimeout)
        #expect(caughtUp.map(\.id) == meanwhile, "every event B published meanwhile, once, in order")
        #expect(eventually(timeout: redisStateTimeout) { a.redisIsUp(true) })
        let later = try publisherA.publishIDs("apart", channelBody(11...15))
        #expect(later.compactMap { idParts($0)?.seq } == Array(11...15), "the refused publish took no sequence")
        for (name, subscriber) in [("A", onA), ("B", onB)] {
            let frames = try subscriber.frames(through: later.last!)
            #expect(frames.map(\.id) == later, "\(name): \(frames)")
        }
        await a.stop()
        await b.stop()
    }

    @Test func aReplicaCutOffLongerThanTheHistoryCoversResetsWithHistoryTruncated() async throws {
        // Small stream nodes, so that MAXLEN ~ trims at a fine grain.
        let redis = try RedisServer.start(arguments: ["--stream-node-max-entries", "10"])
        defer { redis.stop() }
        let link = try RedisLinkProxy(targetPort: redis.port)
        defer { link.stop() }
        let a = try await SpoutTestServer.replica(redisPort: link.port) { $0.channels.historyEvents = 20 }
        let b = try await SpoutTestServer.replica(redisPort: redis.port) { $0.channels.historyEvents = 20 }
        let publisherB = try ChannelHTTP(port: b.port)
        defer { publisherB.close() }
        let first = try publisherB.publishIDs("long", channelBody([1]))
        let onA = try StreamClient.channel("long", port: a.port, headers: ["Last-Event-ID: \(first[0])"])
        defer { onA.close() }
        let before = try publisherB.publishIDs("long", channelBody(2...5))
        #expect(try onA.frames(through: before.last!).map(\.id) == before)

        #expect(link.cut())
        #expect(eventually(timeout: redisStateTimeout) { a.redisIsUp(false, role: "subscribe") })
        var meanwhile: [String] = []
        for batch in 0..<6 {
            meanwhile += try publisherB.publishIDs("long", channelBody((6 + batch * 50)..<(56 + batch * 50)))
        }
        #expect(meanwhile.count == 300)
        let held = Int(try redis.command(["XLEN", "spout:ch:long:events"]).dropFirst()) ?? -1
        #expect(held >= 20 && held < 300, "the stream was trimmed to about the history: \(held)")

        link.restore()
        let frames = try onA.frames(through: meanwhile.last!, timeout: redisStateTimeout)
        let reset = try #require(frames.first)
        #expect(resetReason(reset) == "history-truncated", "\(frames.prefix(3))")
        let rest = Array(frames.dropFirst())
        #expect(rest.allSatisfy { $0.type == "message" })
        #expect(!rest.isEmpty && meanwhile.hasSuffix(rest.map(\.id)), "what the history holds, in order, to the end")
        #expect(rest.count >= 20, "at least the configured history: \(rest.count)")
        if let oldest = reset.object?["oldest"] as? String {
            #expect(oldest == rest.first?.id)
        }
        await a.stop()
        await b.stop()
    }

    @Test func aRedisThatLostItsDataResetsLiveSubscribersAndOldIDs() async throws {
        let redis = try RedisServer.start()
        defer { redis.stop() }
        let (a, b, subscribers, ids) = try await replicasWithSubscribers(redis, channel: "lost")
        defer { subscribers.forEach { $0.close() } }
        let (oldGen, _) = try #require(idParts(ids[0]))

        try redis.kill(keepingData: false)
        let restarted = try redis.restarted()
        defer { restarted.stop() }
        #expect(try restarted.command(["EXISTS", "spout:ch:lost:meta"]) == ":0", "the new Redis holds nothing")
        #expect(eventually(timeout: redisStateTimeout) { a.redisIsUp(true) && b.redisIsUp(true) })

        let publisher = try ChannelHTTP(port: a.port)
        defer { publisher.close() }
        let fresh = try publisher.publishIDs("lost", channelBody(11...13))
        let newGen = try #require(idParts(fresh[0])?.gen)
        #expect(newGen != oldGen, "a Redis without the channel makes a new generation")
        #expect(fresh.compactMap { idParts($0)?.seq } == [1, 2, 3])

        // Live subscribers on both replicas: one reset (unknown-id), then the new events.
        for (index, subscriber) in subscribers.enumerated() {
            let frames = try subscriber.frames(through: fresh.last!)
            #expect(frames.count == 4, "subscriber \(index): \(frames)")
            #expect(frames.first.flatMap(resetReason) == "unknown-id", "subscriber \(index): \(frames)")
            #expect(Array(frames.dropFirst()).map(\.id) == fresh, "subscriber \(index)")
        }
        // A client resuming with an id of the old generation, on either replica: reset, then the new history.
        for replica in [a, b] {
            let client = try StreamClient.channel("lost", port: replica.port, headers: ["Last-Event-ID: \(ids[2])"])
            defer { client.close() }
            let frames = try client.frames(through: fresh.last!)
            #expect(frames.first.flatMap(resetReason) == "unknown-id", "\(frames)")
            #expect(Array(frames.dropFirst()).map(\.id) == fresh)
        }
        await a.stop()
        await b.stop()
    }

    @Test func aReplicaAwayWhileRedisLostItsDataAndWasPublishedToAgainGetsTheNewEventsFromTheirStart()
        async throws
    {
        let redis = try RedisServer.start()
        defer { redis.stop() }
        let link = try RedisLinkProxy(targetPort: redis.port)
        defer { link.stop() }
        let a = try await SpoutTestServer.replica(redisPort: link.port)
        let b = try await SpoutTestServer.replica(redisPort: redis.port)
        let publisherB = try ChannelHTTP(port: b.port)
        defer { publisherB.close() }
        let first = try publisherB.publishIDs("reborn", channelBody([1]))
        let onA = try StreamClient.channel("reborn", port: a.port, headers: ["Last-Event-ID: \(first[0])"])
        defer { onA.close() }
        let before = try publisherB.publishIDs("reborn", channelBody(2...5))
        #expect(try onA.frames(through: before.last!).map(\.id) == before)

        // While A is cut off, Redis loses everything and B publishes to the channel again: a new generation,
        // counted from 1 — below where A's copy was.
        #expect(link.cut())
        #expect(eventually(timeout: redisStateTimeout) { a.redisIsUp(false, role: "subscribe") })
        try redis.kill(keepingData: false)
        let restarted = try redis.restarted()
        defer { restarted.stop() }
        #expect(eventually(timeout: redisStateTimeout) { b.redisIsUp(true) })
        let reborn = try publisherB.publishIDs("reborn", channelBody(11...13))
        #expect(reborn.compactMap { idParts($0)?.seq } == [1, 2, 3])
        #expect(idParts(reborn[0])?.gen != idParts(first[0])?.gen)

        // A comes back: reset (unknown-id), then the new generation's events from its first.
        link.restore()
        let frames = try onA.frames(through: reborn.last!, timeout: redisStateTimeout)
        #expect(frames.first.flatMap(resetReason) == "unknown-id", "\(frames)")
        #expect(Array(frames.dropFirst()).map(\.id) == reborn, "\(frames)")
        let later = try publisherB.publishIDs("reborn", channelBody([14]))
        #expect(try onA.frames(through: later[0]).map(\.id) == later)
        await a.stop()
        await b.stop()
    }

    @Test func aClientResumingOnAReplicaWhoseCopyHasNotHeardOfTheGenerationYetMissesNothingAndGetsNoReset()
        async throws
    {
        let redis = try RedisServer.start()
        defer { redis.stop() }
        let link = try RedisLinkProxy(targetPort: redis.port)
        defer { link.stop() }
        let a = try await SpoutTestServer.replica(redisPort: redis.port)
        let b = try await SpoutTestServer.replica(redisPort: link.port)
        // B's copy of the channel is loaded while Redis has nothing of it: it knows no generation.
        let live = try StreamClient.channel("young", port: b.port)
        defer { live.close() }
        #expect(eventually { (try? b.metric("spout_channel_subscribers")) == 1 }, "the copy loaded and was joined")

        // B is cut off; A publishes the channel's first events, and a client that saw the first one moves to B.
        #expect(link.cut())
        #expect(eventually(timeout: redisStateTimeout) { b.redisIsUp(false, role: "subscribe") })
        let ids = try ChannelHTTP(port: a.port).publishIDs("young", channelBody(1...3))
        let moved = try StreamClient.channel("young", port: b.port, headers: ["Last-Event-ID: \(ids[0])"])
        defer { moved.close() }
        #expect(moved.status == 200)

        // B's copy cannot tell whether that id is newer than what it holds or gone: it asks Redis once it can.
        link.restore()
        let frames = try moved.frames(through: ids[2], timeout: redisStateTimeout)
        #expect(frames.map(\.id) == Array(ids[1...]), "the events after the client's id, no reset: \(frames)")
        #expect(try live.frames(through: ids[2], timeout: redisStateTimeout).map(\.id) == ids)
        await a.stop()
        await b.stop()
    }

    @Test func readinessFailsWhileRedisIsDownOnlyWhenConfiguredTo() async throws {
        let redis = try RedisServer.start()
        defer { redis.stop() }
        let failing = try await SpoutTestServer.replica(redisPort: redis.port, channels: ["redisReadiness": "fail"])
        let reporting = try await SpoutTestServer.replica(
            redisPort: redis.port,
            channels: ["redisReadiness": "report"]
        )
        let byDefault = try await SpoutTestServer.replica(redisPort: redis.port)
        let all = [failing, reporting, byDefault]
        #expect(eventually(timeout: redisStateTimeout) { all.allSatisfy { (try? $0.get("/ready"))?.status == 200 } })
        for replica in all {
            #expect(try replica.get("/ready").text.lowercased().contains("redis"), "the body names Redis's state")
        }

        try redis.kill(keepingData: false)
        #expect(eventually(timeout: redisStateTimeout) { (try? failing.get("/ready"))?.status == 503 })
        #expect(eventually(timeout: redisStateTimeout) { reporting.redisIsUp(false) && byDefault.redisIsUp(false) })
        for replica in [reporting, byDefault] {
            let ready = try replica.get("/ready")
            #expect(ready.status == 200, "report (the default) stays ready: \(ready)")
            #expect(ready.text.lowercased().contains("redis"))
        }
        let down = try failing.get("/ready")
        #expect(down.text.lowercased().contains("redis"), "\(down)")
        #expect(failing.isHealthy(), "/health is about the process, not Redis")

        let restarted = try redis.restarted()
        defer { restarted.stop() }
        #expect(eventually(timeout: redisStateTimeout) { (try? failing.get("/ready"))?.status == 200 })
        #expect(try reporting.get("/ready").status == 200)
        for replica in all { await replica.stop() }
    }

    @Test func theMetricsShowRedisUpRoundTripsErrorsAndReconnects() async throws {
        let redis = try RedisServer.start()
        defer { redis.stop() }
        let replica = try await SpoutTestServer.replica(redisPort: redis.port)
        let subscriber = try StreamClient.channel("measured", port: replica.port)
        defer { subscriber.close() }
        #expect(eventually(timeout: redisStateTimeout) { replica.redisIsUp(true) })
        #expect(eventually(timeout: redisStateTimeout) { replica.redisIsUp(true, role: "subscribe") })
        let publisher = try ChannelHTTP(port: replica.port)
        _ = try publisher.publishIDs("measured", channelBody(1...3))
        publisher.close()

        let text = try replica.get("/metrics").text
        for family in [
            "spout_redis_up gauge", "spout_redis_round_trip_seconds summary", "spout_redis_errors_total counter",
            "spout_redis_reconnects_total counter",
        ] {
            #expect(text.contains("# TYPE \(family)"), "\(family)")
        }
        #expect(!text.contains("spout_redis_tls_"), "the TLS families are for rediss:// only")
        #expect(replica.labelledCounter("spout_redis_round_trip_seconds_count", #"role="publish""#) >= 1)
        #expect(replica.labelledCounter("spout_redis_round_trip_seconds_sum", #"role="publish""#) > 0)
        let reconnectsBefore = replica.labelledCounter("spout_redis_reconnects_total", #"role="publish""#)
        let subscribeReconnectsBefore = replica.labelledCounter("spout_redis_reconnects_total", #"role="subscribe""#)
        #expect(reconnectsBefore >= 0 && subscribeReconnectsBefore >= 0)

        try redis.kill(keepingData: false)
        #expect(eventually(timeout: redisStateTimeout) { replica.redisIsUp(false) })
        #expect(eventually(timeout: redisStateTimeout) { replica.redisIsUp(false, role: "subscribe") })
        #expect(
            eventually(timeout: redisStateTimeout) {
                replica.labelledCounter("spout_redis_errors_total", #"role="publish""#, #"kind="connection""#) >= 1
            }
        )

        let restarted = try redis.restarted()
        defer { restarted.stop() }
        #expect(eventually(timeout: redisStateTimeout) { replica.redisIsUp(true) })
        #expect(eventually(timeout: redisStateTimeout) { replica.redisIsUp(true, role: "subscribe") })
        #expect(replica.labelledCounter("spout_redis_reconnects_total", #"role="publish""#) >= reconnectsBefore + 1)
        #expect(
            replica.labelledCounter("spout_redis_reconnects_total", #"role="subscribe""#)
                >= subscribeReconnectsBefore + 1
        )
        await replica.stop()
    }
}
