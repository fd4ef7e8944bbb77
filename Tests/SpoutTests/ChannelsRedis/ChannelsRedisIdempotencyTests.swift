import Foundation
import TestSupport
import Testing

@testable import Spout

/// Publishes over Redis whose acknowledgement tells the truth, and `Idempotency-Key` kept in Redis: a publish Redis
/// took but did not confirm is an unknown outcome (not "nothing was stored"), and a retry with its key neither loses
/// nor duplicates it, on any replica, including one started later.
@Suite(.offPool, .enabled(if: RedisServer.testsEnabled), .timeLimit(.minutes(3 * TestTiming.scale)))
struct ChannelsRedisIdempotencyTests {
    static func problemType(_ response: LoopbackClient.Response) -> String? {
        ChannelIdempotencyTests.problemType(response)
    }

    static func ids(_ response: LoopbackClient.Response) -> [String]? { ChannelIdempotencyTests.ids(response) }

    @Test func aPublishWhileRedisIsFrozenIsAnUnknownOutcomeAndARetryWithItsKeyDeliversItOnce() async throws {
        let redis = try RedisServer.start()
        defer { redis.stop() }
        let replica = try await SpoutTestServer.replica(redisPort: redis.port)
        let publisher = try ChannelHTTP(port: replica.port)
        defer { publisher.close() }
        let first = try publisher.publishIDs("frozen", channelBody([0]))
        let subscriber = try StreamClient.channel("frozen", port: replica.port, headers: ["Last-Event-ID: \(first[0])"])
        defer { subscriber.close() }
        let key = #"Idempotency-Key: "frozen-1""#
        let body = Array(channelBody([1]).utf8)

        redis.freeze()
        defer { redis.thaw() }
        // The publish, written on a connection of its own and answered later: Redis has its command, unread.
        let waiting = try ChannelHTTP(port: replica.port)
        defer { waiting.close() }
        try waiting.client.send(
            Array(
                ("POST /channels/frozen/events HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                    + "Content-Length: \(body.count)\r\n\(key)\r\n\r\n").utf8
            ) + body
        )
        #expect(eventually { replica.service.channels.idempotency.count == 1 }, "the publish is in flight")
        // Its twin, sent before the first has its answer: 409, and it is not sent to Redis.
        let twin = try publisher.send("POST", "/channels/frozen/events", headers: [key], body: body)
        #expect(twin.status == 409, "\(twin)")
        #expect(Self.problemType(twin) == "/problems/idempotency-key-in-flight")

        // The command timeout (5 s) passes: the answer says the outcome is unknown, not that nothing was stored.
        let answer = try waiting.client.readResponse(timeout: .seconds(30))
        #expect(answer.status == 503, "\(answer)")
        #expect(Self.problemType(answer) == "/problems/outcome-unknown", "\(answer.text)")
        #expect(answer.header("Retry-After") == "1")
        #expect(answer.text.contains("same Idempotency-Key"), "\(answer.text)")
        #expect(!answer.text.contains("nothing was stored"), "\(answer.text)")
        #expect(replica.service.channels.idempotency.count == 0, "no longer in flight")

        // Redis runs again, and runs the command it held: the event is delivered after all.
        redis.thaw()
        let delivered = try subscriber.frames(1, timeout: .seconds(30))
        #expect(numbers(delivered) == [1])
        // The retry the problem asks for (once Redis answers again): the same id, nothing published.
        var retried: LoopbackClient.Response?
        #expect(
            eventually(timeout: redisStateTimeout) {
                retried = try? publisher.send("POST", "/channels/frozen/events", headers: [key], body: body)
                return retried?.status == 202
            },
            "\(String(describing: retried))"
        )
        #expect(retried.flatMap(Self.ids) == delivered.map(\.id))
        let next = try publisher.publishIDs("frozen", channelBody([2]))
        let rest = try subscriber.frames(through: next[0])
        #expect(numbers(rest) == [2], "the retry published nothing: \(rest)")
        #expect(try redis.command(["XLEN", "spout:ch:frozen:events"]) == ":3")
        await replica.stop()
    }

    @Test func aKeyIsHonouredByEveryReplicaAndByOneStartedAfterTheFirstStopped() async throws {
        let redis = try RedisServer.start()
        defer { redis.stop() }
        let a = try await SpoutTestServer.replica(redisPort: redis.port)
        let b = try await SpoutTestServer.replica(redisPort: redis.port)
        let key = #"Idempotency-Key: "kept-1""#
        let body = channelBody([1, 2])

        let publisherA = try ChannelHTTP(port: a.port)
        let ids = try publisherA.publishIDs("kept", body, headers: [key])
        publisherA.close()
        #expect(ids.count == 2)
        // Another replica: the same answer, nothing published; another body with the key: 422.
        let publisherB = try ChannelHTTP(port: b.port)
        defer { publisherB.close() }
        #expect(Self.ids(try publisherB.publish("kept", body, headers: [key])) == ids)
        let reused = try publisherB.publish("kept", channelBody([3]), headers: [key])
        #expect(reused.status == 422, "\(reused)")
        #expect(Self.problemType(reused) == "/problems/idempotency-key-reused")
        // The same key on another channel is another key.
        #expect(try publisherB.publishIDs("other", body, headers: [key]).count == 2)

        // The first replica is gone; one started since honours the key it stored.
        await a.stop()
        let c = try await SpoutTestServer.replica(redisPort: redis.port)
        let publisherC = try ChannelHTTP(port: c.port)
        defer { publisherC.close() }
        let again = try publisherC.publish("kept", body, headers: [key])
        #expect(again.status == 202, "\(again)")
        #expect(Self.ids(again) == ids)

        #expect(try redis.command(["XLEN", "spout:ch:kept:events"]) == ":2", "published once")
        #expect(try redis.command(["HGET", "spout:ch:kept:meta", "seq"]) == "2")
        // Redis keeps the key for channels.idempotencyWindowSeconds (a day by default).
        let ttl = try redis.command(["PTTL", "spout:idem:kept:kept-1"])
        let milliseconds = try #require(Int(ttl.dropFirst()), "\(ttl)")
        #expect(milliseconds > 86_000_000 && milliseconds <= 86_400_000, "\(ttl)")
        await b.stop()
        await c.stop()
    }

    @Test func aPublishNeverWrittenToRedisSaysNothingWasStored() async throws {
        let redis = try RedisServer.start()
        defer { redis.stop() }
        let replica = try await SpoutTestServer.replica(redisPort: redis.port)
        let publisher = try ChannelHTTP(port: replica.port)
        defer { publisher.close() }
        _ = try publisher.publishIDs("gone", channelBody([1]))
        try redis.kill(keepingData: false)
        // Once the replica knows Redis is gone, a publish is not written at all: that one is certain.
        #expect(eventually(timeout: redisStateTimeout) { replica.redisIsUp(false) })
        var response: LoopbackClient.Response?
        #expect(
            eventually(timeout: redisStateTimeout) {
                response = try? publisher.publish("gone", channelBody([2]), headers: [#"Idempotency-Key: "g""#])
                return response.map { Self.problemType($0) == "/problems/unavailable" } ?? false
            },
            "\(String(describing: response))"
        )
        if let response {
            expectUnavailable(response)
            #expect(response.text.contains("nothing was stored"), "\(response.text)")
        }
        #expect(replica.service.channels.idempotency.count == 0, "a refused publish leaves no key in flight")
        await replica.stop()
    }
}
