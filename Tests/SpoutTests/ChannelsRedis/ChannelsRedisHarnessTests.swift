import Foundation
import TestSupport
import Testing

/// The harness the Redis channel tests stand on: a redis-server killed and restarted on its port, with and without
/// its data.
@Suite(.offPool, .enabled(if: RedisServer.testsEnabled), .timeLimit(.minutes(3 * TestTiming.scale)))
struct ChannelsRedisHarnessTests {
    @Test func aRestartKeepsTheDataOnlyWhenAskedTo() throws {
        let redis = try RedisServer.start()
        defer { redis.stop() }
        #expect(try redis.command(["SET", "k", "v1"]) == "+OK")
        #expect(try redis.command(["GET", "k"]) == "v1")

        try redis.kill(keepingData: true)
        #expect(throws: (any Error).self) { try redis.command(["PING"], timeout: .seconds(1)) }
        let kept = try redis.restarted()
        defer { kept.stop() }
        #expect(kept.port == redis.port)
        #expect(try kept.command(["GET", "k"]) == "v1", "the dump was loaded")

        try kept.kill(keepingData: false)
        let empty = try kept.restarted()
        defer { empty.stop() }
        #expect(empty.port == redis.port)
        #expect(try empty.command(["GET", "k"]) == "$-1", "a new server without the data")
        #expect(!FileManager.default.fileExists(atPath: kept.directory.path), "the old directory is gone")
    }
}

@Suite(.offPool, .enabled(if: RedisServer.testsEnabled), .timeLimit(.minutes(3 * TestTiming.scale)))
struct ChannelsRedisLinkProxyTests {
    @Test func aCutEndsTheRelayedConnectionsAndRefusesNewOnesUntilRestored() throws {
        let redis = try RedisServer.start()
        defer { redis.stop() }
        let link = try RedisLinkProxy(targetPort: redis.port)
        defer { link.stop() }
        let subscriber = try LoopbackClient(port: link.port)
        defer { subscriber.close() }
        try subscriber.send("*2\r\n$9\r\nSUBSCRIBE\r\n$1\r\nx\r\n")
        let confirmation = String(decoding: try subscriber.readSome(timeout: .seconds(5)), as: UTF8.self)
        #expect(confirmation.contains("subscribe"))
        link.cut()
        #expect(subscriber.waitForClose(timeout: .seconds(5)), "the relayed connection ends")
        #expect(try redis.command(["PUBLISH", "x", "hello"]) == ":0", "nobody is subscribed any more")
        let refused = try LoopbackClient(port: link.port)
        defer { refused.close() }
        try? refused.send("*1\r\n$4\r\nPING\r\n")
        #expect(refused.waitForClose(timeout: .seconds(5)), "a new connection is closed at once")
        link.restore()
        let again = try LoopbackClient(port: link.port)
        defer { again.close() }
        try again.send("*1\r\n$4\r\nPING\r\n")
        #expect(String(decoding: try again.readSome(timeout: .seconds(5)), as: UTF8.self) == "+PONG\r\n")
    }
}
