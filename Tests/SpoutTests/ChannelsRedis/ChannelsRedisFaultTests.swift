import Foundation
import TestSupport
import Testing

@testable import Spout

/// A Redis that answers the publish script with garbage, and the configuration of the Redis channels.
@Suite(.offPool, .timeLimit(.minutes(3 * TestTiming.scale)))
struct ChannelsRedisFaultTests {
    /// Replies to the publish script a real Redis never sends.
    static let badReplies: [(name: String, bytes: [UInt8])] = [
        ("truncated array", Array("*3\r\n$5\r\nab".utf8)),
        ("truncated line", Array("*2\r\n:1".utf8)),
        ("nothing at all", []),
        ("unknown type byte", Array("?what\r\n".utf8)),
        ("integer that is not one", Array(":12x4\r\n".utf8)),
        ("negative bulk length", Array("$-5\r\n".utf8)),
        ("bulk longer than what follows", Array("$10\r\nabc\r\n".utf8)),
        ("huge bulk length", Array("$99999999999999\r\n".utf8)),
        ("overflowing bulk length", Array("$99999999999999999999999\r\n".utf8)),
        ("huge array length", Array("*99999999999\r\n".utf8)),
        ("deep nesting", Array(String(repeating: "*1\r\n", count: 100_000).utf8)),
        ("bare newline", Array("\n\n\n".utf8)),
        ("wrong shape: ok", Array("+OK\r\n".utf8)),
        ("wrong shape: integer", Array(":5\r\n".utf8)),
        ("wrong shape: null", Array("_\r\n".utf8)),
        ("wrong shape: ids that are not numbers", Array("*2\r\n$3\r\nabc\r\n$2\r\n-1\r\n".utf8)),
        ("script error", Array("-ERR something went wrong in the script\r\n".utf8)),
        ("binary junk", (0..<200).map { UInt8(truncatingIfNeeded: $0 &* 37) }),
    ]

    @Test func garbageFromRedisGetsA503AndNeverTakesTheProcessDown() async throws {
        let fake = try MisbehavingRedis(badReplies: Self.badReplies.map(\.bytes))
        defer { fake.stop() }
        let replica = try await SpoutTestServer.replica(redisPort: fake.port)
        let subscriber = try StreamClient.channel("bad", port: replica.port)
        defer { subscriber.close() }
        #expect(subscriber.status == 200)

        // Each bad reply in turn: publishes are refused until one reaches the script (the client reconnects after
        // each, with a backoff), and that one is refused too.
        for (index, bad) in Self.badReplies.enumerated() {
            var refusals = 0
            let reached = eventually(timeout: .seconds(30)) {
                guard let response = try? ChannelHTTP(port: replica.port).publish("bad", channelBody([index])) else {
                    return false
                }
                if response.status != 503 {
                    Issue.record("\(bad.name): \(response)")
                    return true
                }
                refusals += 1
                return fake.scriptCalls > index
            }
            #expect(reached, "\(bad.name): the script was called (\(fake.scriptCalls) calls, \(refusals) refusals)")
            #expect(replica.isHealthy(), "\(bad.name): /health still answers")
        }
        let response = try ChannelHTTP(port: replica.port).publish("bad", channelBody([0]))
        expectUnavailable(response)
        #expect(subscriber.events.isEmpty, "nothing was delivered: \(subscriber.events)")
        #expect(!subscriber.bodyEnded, "the stream is still open")
        #expect(replica.isHealthy())
        await replica.stop()
    }

    @Test(.enabled(if: RedisServer.testsEnabled))
    func aRedisOverItsMemoryLimitRefusesTheWholePublish() async throws {
        let redis = try RedisServer.start()
        defer { redis.stop() }
        let replica = try await SpoutTestServer.replica(redisPort: redis.port)
        let publisher = try ChannelHTTP(port: replica.port)
        defer { publisher.close() }
        let first = try publisher.publishIDs("full", channelBody([1]))
        #expect(first.count == 1)
        #expect(try redis.command(["CONFIG", "SET", "maxmemory-policy", "noeviction"]) == "+OK")
        #expect(try redis.command(["CONFIG", "SET", "maxmemory", "1"]) == "+OK")
        // Full: nothing of the publish is stored (no sequence taken, no entry, no new channel), and it says 503.
        for (channel, body) in [("full", channelBody(2...3)), ("fresh", channelBody([1]))] {
            let response = try publisher.send("POST", "/channels/\(channel)/events", body: Array(body.utf8))
            expectUnavailable(response, "publish on \(channel) while Redis is full")
            // Redis refused it, so it is certain: nothing was stored (not an unknown outcome).
            #expect(response.text.contains(#""type":"/problems/unavailable""#), "\(response.text)")
        }
        #expect(try redis.command(["XLEN", "spout:ch:full:events"]) == ":1")
        #expect(try redis.command(["HGET", "spout:ch:full:meta", "seq"]) == "1")
        #expect(try redis.command(["EXISTS", "spout:ch:fresh:meta"]) == ":0")
        #expect(try redis.command(["CONFIG", "SET", "maxmemory", "0"]) == "+OK")
        let later = try publisher.publishIDs("full", channelBody([2]))
        #expect(later.compactMap { idParts($0)?.seq } == [2], "the refused publish took no sequence")
        #expect(replica.isHealthy())
        await replica.stop()
    }

    @Test(.enabled(if: RedisServer.testsEnabled))
    func forgedAndRepeatedAnnouncementsOnTheChannelsPubSubNeitherCrashNorDuplicate() async throws {
        let redis = try RedisServer.start()
        defer { redis.stop() }
        let replica = try await SpoutTestServer.replica(redisPort: redis.port)
        let publisher = try ChannelHTTP(port: replica.port)
        defer { publisher.close() }
        let first = try publisher.publishIDs("forged", channelBody([1]))
        let subscriber = try StreamClient.channel("forged", port: replica.port, headers: ["Last-Event-ID: \(first[0])"])
        defer { subscriber.close() }
        let ids = first + (try publisher.publishIDs("forged", channelBody(2...3)))
        #expect(try subscriber.frames(through: ids[2]).map(\.id) == Array(ids[1...]))
        let gen = try #require(idParts(ids[0])?.gen)

        // Whatever another Redis client publishes on the channel's pub/sub: garbage, numbers that overflow, counts
        // and lengths past the end, and a repeat of an announcement already applied.
        let forged = [
            "", "garbage", "\n\n\n\n", "\(gen)\n", "\(gen)\n0\n0\n1\n0 7\n{\"n\":9}",
            "\(gen)\n99999999999999999999999\n0\n1\n0 7\n{\"n\":9}", "\(gen)\n4\n0\n99999999\n0 7\n{\"n\":9}",
            "\(gen)\n4\n0\n1\n0 99999\n{\"n\":9}", "\(gen)\n4\n0\n1\n-1 7\n{\"n\":9}",
            "\(gen)\n4\n0\n1\n0 7\n{\"n\":9}trailing", "NOT-A-GEN!\n4\n0\n1\n0 7\n{\"n\":9}",
            "\(gen)\n18446744073709551615\n0\n2\n0 1\n10 1\n2",
            "\(gen)\n2\n0\n1\n0 7\n{\"n\":2}",  // a repeat of event 2
            // Another generation, past its first events: the replica asks Redis (which has no such generation)
            // rather than taking it, or anything after it, for the channel's.
            "zzzzzzzz\n7\n0\n1\n0 7\n{\"n\":7}",
        ]
        for payload in forged {
            #expect(try redis.command(["PUBLISH", "spout:ch:forged", payload]).hasPrefix(":"), "\(payload)")
        }
        #expect(replica.isHealthy())
        let later = try publisher.publishIDs("forged", channelBody(4...5))
        let frames = try subscriber.frames(through: later.last!)
        #expect(frames.map(\.id) == later, "only the real events, once: \(frames)")
        #expect(numbers(frames) == [4, 5])
        #expect(replica.isHealthy())
        await replica.stop()
    }

    @Test func withoutARedisURLChannelsStayInProcess() async throws {
        let defaults = SpoutConfiguration()
        #expect(defaults.channels.redisURL.isEmpty)
        // No Redis anywhere: publishing works, and the ids carry the in-process epoch (the start time in
        // milliseconds, base 36), not a Redis generation.
        let server = try SpoutTestServer()
        let ids = try ChannelHTTP(port: server.port).publishIDs("local", channelBody([1]))
        let started = try #require(idParts(ids[0]).flatMap { UInt64($0.gen, radix: 36) })
        let now = UInt64(Date().timeIntervalSince1970 * 1000)
        #expect(started <= now && now - started < 600_000, "\(ids)")
        #expect(try server.get("/ready").status == 200)
        await server.stop()
    }

    @Test func theRedisURLComesFromTheFileOrTheEnvironment() throws {
        let fromEnvironment = try SpoutConfiguration.load(
            arguments: [],
            environment: ["SPOUT_REDIS_URL": "redis://:secret@127.0.0.1:6380/2"]
        )
        guard case .run(let configuration) = fromEnvironment else {
            Issue.record("expected a run command")
            return
        }
        #expect(configuration.channels.redisURL == "redis://:secret@127.0.0.1:6380/2")
        var fromFile = SpoutConfiguration()
        try fromFile.apply(
            json: Data(
                #"{"channels":{"redisURL":"redis://127.0.0.1","redisReadiness":"fail","redisKeyPrefix":"t1:"}}"#.utf8
            ),
            source: "test"
        )
        #expect(fromFile.channels.redisURL == "redis://127.0.0.1")
    }

    @Test(arguments: [
        "rediss://127.0.0.1:99999", "not a url", "http://127.0.0.1:6379", "redis://127.0.0.1:99999",
        "redis://127.0.0.1/x", "redis://",
    ])
    func aRedisURLThatCannotBeUsedIsRefusedAtStartNamingTheKey(url: String) async {
        #expect {
            try SpoutConfiguration.load(arguments: [], environment: ["SPOUT_REDIS_URL": url])
        } throws: { error in
            let text = "\(error)"
            return text.contains("channels.redisURL")
        }
        var file = SpoutConfiguration()
        #expect {
            try file.apply(json: Data(#"{"channels":{"redisURL":"\#(url)"}}"#.utf8), source: "spout.json")
        } throws: { error in
            "\(error)".contains("channels.redisURL")
        }
    }
}
