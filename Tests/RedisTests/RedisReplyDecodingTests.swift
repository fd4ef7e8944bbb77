import RESP
import Reactive
import Testing

@testable import Redis

/// How the typed calls read replies, in both protocol versions, without a server.
@Suite struct RedisReplyDecodingTests {
    private func entry(_ id: String, _ fields: [String]) -> RESPValue {
        .array([.bulkString(id), .array(fields.map { .bulkString($0) })])
    }

    @Test func streamEntriesKeepTheirFieldsInOrder() {
        let entries = RedisStreamEntry.list(.array([entry("1-0", ["a", "1", "b", "2"]), entry("2-0", [])]))
        #expect(
            entries == [
                RedisStreamEntry(id: "1-0", fields: [RedisStreamField("a", "1"), RedisStreamField("b", "2")]),
                RedisStreamEntry(id: "2-0", fields: []),
            ]
        )
        #expect(entries?.first?[field: "b"] == Array("2".utf8))
        // A deleted entry in a pending list has null fields.
        #expect(RedisStreamEntry(.array([.bulkString("3-0"), .null])) == RedisStreamEntry(id: "3-0", fields: []))
        #expect(RedisStreamEntry.list(.null) == [])
    }

    @Test func malformedEntriesAreRefused() {
        #expect(RedisStreamEntry.list(.integer(1)) == nil)
        #expect(RedisStreamEntry.list(.array([entry("1-0", ["odd"])])) == nil)
        #expect(RedisStreamEntry.list(.array([.array([.bulkString("1-0")])])) == nil)
        #expect(RedisStreamEntry.list(.array([.array([.integer(1), .array([])])])) == nil)
        #expect(
            RedisStreamEntry.list(.array([.array([.bulkString("1-0"), .array([.integer(1), .integer(2)])])])) == nil
        )
    }

    @Test func xreadRepliesInBothProtocols() {
        let resp3 = RESPValue.map([.init(.bulkString("s"), .array([entry("1-0", ["k", "v"])]))])
        let resp2 = RESPValue.array([.array([.bulkString("s"), .array([entry("1-0", ["k", "v"])])])])
        let expected = [
            RedisStreamRead(
                key: Array("s".utf8),
                entries: [RedisStreamEntry(id: "1-0", fields: [RedisStreamField("k", "v")])]
            )
        ]
        #expect(RedisStreamRead.list(resp3) == expected)
        #expect(RedisStreamRead.list(resp2) == expected)
        #expect(RedisStreamRead.list(.null) == [])
        #expect(RedisStreamRead.list(.array(nil)) == [])
        #expect(RedisStreamRead.list(.array([.bulkString("s")])) == nil)
        #expect(RedisStreamRead.list(.simpleString("OK")) == nil)
    }

    @Test func typedReadsReportTheUnexpectedShape() {
        let read = RedisConnection.read(.success(.integer(7))) { $0.string }
        #expect(read == .failure(.unexpectedReply("(integer) 7")))
        let passed = RedisConnection.read(.failure(.server("ERR x"))) { $0.string }
        #expect(passed == .failure(.server("ERR x")))
    }

    @Test func configurationCapsRepliesInTheParser() {
        let configuration = RedisConfiguration(url: RedisURL(host: "127.0.0.1"), maxReplyBytes: 10)
        #expect(configuration.maxReplyBytes == 1024)
        #expect(RedisConfiguration(url: RedisURL(host: "::1"), maxOutboundBytes: 1).maxOutboundBytes == 64 << 10)
        let parser = configuration.machineConfiguration.parser
        #expect(parser.maxBulkBytes == 1024)
        #expect(parser.maxBufferedBytes == 1024)
        #expect(parser.maxLineBytes == 1024)
    }

    @Test func theDefaultReconnectIsExponentialWithFullJitter() {
        let policy = RedisConfiguration(url: RedisURL(host: "127.0.0.1")).reconnect
        #expect(policy == RedisConfiguration.defaultReconnect)
        #expect(policy.maxAttempts == nil)
        #expect(policy.delay(afterFailure: 1, random: 0) == .milliseconds(100))
        #expect(policy.delay(afterFailure: 3, random: 0) == .milliseconds(400))
        #expect(policy.delay(afterFailure: 3, random: 0.75) == .milliseconds(100))
        #expect(policy.delay(afterFailure: 30, random: 0) == .seconds(10))
        #expect(policy.delay(afterFailure: 30, random: 0.999_999) < .milliseconds(1))
    }

    @Test func errorsSayWhatHappened() {
        #expect(RedisError.connection(.notConnected).isNotConnected)
        #expect(!RedisError.server("ERR").isNotConnected)
        #expect(RedisError.server("ERR no").description == "redis answered with an error: ERR no")
        #expect(RedisConnectionStatus.reconnecting(failures: 2, lastError: "x").description.contains("2 failures"))
        var metrics = RedisConnectionMetrics()
        #expect(metrics.roundTripMean == nil)
        metrics.roundTrips = 2
        metrics.roundTripTotal = .milliseconds(4)
        #expect(metrics.roundTripMean == .milliseconds(2))
    }
}
