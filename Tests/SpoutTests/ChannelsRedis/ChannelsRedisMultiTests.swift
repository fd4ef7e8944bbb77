import Foundation
import TestSupport
import Testing

@testable import Spout

/// `GET /subscribe` over Redis, on two replicas of one real redis-server: channels published on one replica reach
/// a multi-channel stream on the other, a pattern picks up a channel created on another replica, and the cursor
/// resumes every channel on either replica.
@Suite(.offPool, .enabled(if: RedisServer.testsEnabled), .timeLimit(.minutes(3 * TestTiming.scale)))
struct ChannelsRedisMultiTests {
    @Test func aStreamOnOneReplicaFollowsChannelsAndPatternsPublishedOnAnotherAndResumesOnEither() async throws {
        let redis = try RedisServer.start()
        defer { redis.stop() }
        let a = try await SpoutTestServer.replica(redisPort: redis.port)
        let b = try await SpoutTestServer.replica(redisPort: redis.port)
        let publisher = try ChannelHTTP(port: a.port)
        defer { publisher.close() }
        // The channels exist in Redis before the stream starts (so that the list shows when B's copies are live).
        _ = try publisher.publishIDs("r.a", channelBody([0]))
        _ = try publisher.publishIDs("r.b", channelBody([0]))
        _ = try publisher.publishIDs("news.old", channelBody([0]))

        let stream = try StreamClient.multi(["r.a", "r.b", "news.*"], port: b.port)
        defer { stream.close() }
        #expect(stream.status == 200)
        for name in ["r.a", "r.b", "news.old"] {
            #expect(eventually { (try? b.channelList()[name]?.subscribers) == 1 }, "\(name) joined on B")
        }
        _ = try publisher.publishIDs("r.a", channelBody([1]))
        _ = try publisher.publishIDs("r.b", channelBody([2]))
        _ = try publisher.publishIDs("news.old", channelBody([3]))
        // Created on A after the stream began: B hears of it from Redis and follows it from its first event.
        _ = try publisher.publishIDs("news.new", channelBody([4, 5]))
        let frames = try stream.multiFrames(5)
        #expect(frames.allSatisfy { $0.type == "message" }, "\(frames)")
        #expect(frames.filter { $0.channel == "r.a" }.map(\.number) == [1])
        #expect(frames.filter { $0.channel == "r.b" }.map(\.number) == [2])
        #expect(frames.filter { $0.channel == "news.old" }.map(\.number) == [3])
        #expect(frames.filter { $0.channel == "news.new" }.map(\.number) == [4, 5])
        let cursor = try #require(frames.last?.cursor)
        stream.close()

        // While it is away, on A; then it resumes on A with the cursor B gave: every channel after its position.
        _ = try publisher.publishIDs("r.a", channelBody([6]))
        _ = try publisher.publishIDs("news.new", channelBody([7]))
        _ = try publisher.publishIDs("news.later", channelBody([8]))
        let resumed = try StreamClient.multi(
            ["r.a", "r.b", "news.*"],
            port: a.port,
            headers: ["Last-Event-ID: \(cursor)"]
        )
        defer { resumed.close() }
        let replayed = try resumed.multiFrames(3)
        #expect(replayed.allSatisfy { $0.type == "message" }, "\(replayed)")
        #expect(replayed.filter { $0.channel == "r.a" }.map(\.number) == [6])
        #expect(replayed.filter { $0.channel == "news.new" }.map(\.number) == [7])
        #expect(
            replayed.filter { $0.channel == "news.later" }.map(\.number) == [8],
            "not in the cursor: from its start"
        )
        #expect(eventually { (try? a.channelList()["r.b"]?.subscribers) == 1 })
        _ = try publisher.publishIDs("r.b", channelBody([9]))
        #expect(try resumed.multiFrames(1).map(\.number) == [9], "r.b resumed with nothing replayed twice")
        await a.stop()
        await b.stop()
    }
}
