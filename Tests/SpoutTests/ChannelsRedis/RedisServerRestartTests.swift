import Foundation
import TestSupport
import Testing

/// The harness the Redis channel tests stand on: a redis-server killed and restarted on its port, with and without
/// its data.
@Suite(.offPool, .enabled(if: RedisServer.testsEnabled), .timeLimit(.minutes(TestTiming.scale)))
struct RedisServerRestartTests {
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
