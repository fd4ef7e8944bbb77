import EventLoops
import RESP
import Reactive
import Redis
import TestSupport
import Testing

/// ``RedisConnection`` against a scripted fake server (``FakeRedisServer``) that sends what Redis never does:
/// malformed, truncated, huge, unrequested or missing replies. Each must fail the commands waiting with a clear
/// error, close the connection and reconnect — never crash, never grow memory past the configured cap.
@Suite(.offPool, .timeLimit(.minutes(3 * TestTiming.scale)))
struct RedisFaultTests {
    /// A script: the handshake, one command answered with `reply`, then wait for the client to close.
    private static func answering(_ reply: String) -> FakeRedisServer.Script {
        { peer in
            guard peer.handshake(), peer.readCommand() != nil else { return }
            peer.write(reply)
            _ = peer.waitForClose()
        }
    }

    /// A script: the handshake, then every command answered with `+PONG`, until the client closes.
    private static let healthy: FakeRedisServer.Script = { peer in
        guard peer.handshake() else { return }
        for _ in 0..<100 {
            guard peer.readCommand() != nil else { return }
            peer.write("+PONG\r\n")
        }
    }

    /// Sends PING to a server running `script` first and `healthy` after: the PING's outcome, after which the
    /// connection must reconnect and answer again.
    private func failsThenRecovers(
        _ script: @escaping FakeRedisServer.Script,
        maxReplyBytes: Int = 64 << 10,
        commandTimeout: Duration? = .seconds(5),
        connectTimeout: Duration = .seconds(5)
    ) throws -> Result<RESPValue, RedisError> {
        let fake = try FakeRedisServer(scripts: [script, RedisFaultTests.healthy])
        defer { fake.stop() }
        let harness = RedisHarness()
        defer { harness.close() }
        let redis = harness.connect(
            RedisHarness.configuration(
                port: fake.port,
                commandTimeout: commandTimeout,
                connectTimeout: connectTimeout,
                maxReplyBytes: maxReplyBytes
            )
        )
        let outcome = try harness.result(redis, RESPCommand("PING"))
        try harness.waitForStatus(redis, "the second connection") { $0 == .connected }
        #expect(fake.accepted == 2)
        #expect(try harness.request(redis, RESPCommand("PING")) == .simpleString("PONG"))
        #expect(redis.metrics.reconnects == 0 || redis.metrics.reconnects == 1)
        #expect(redis.metrics.connectionFailures == 1)
        return outcome
    }

    @Test func aMalformedReplyFailsTheCommandWithAProtocolViolation() throws {
        let outcome = try failsThenRecovers(RedisFaultTests.answering(":12abc\r\n"))
        #expect(outcome == .failure(.connection(.protocolViolation(.invalidInteger("12abc")))))
    }

    @Test func anUnknownTypeByteIsAProtocolViolation() throws {
        let outcome = try failsThenRecovers(RedisFaultTests.answering("?what\r\n"))
        #expect(outcome == .failure(.connection(.protocolViolation(.unknownType(UInt8(ascii: "?"))))))
    }

    @Test func aTruncatedReplyFailsTheCommandWhenTheServerCloses() throws {
        let outcome = try failsThenRecovers { peer in
            guard peer.handshake(), peer.readCommand() != nil else { return }
            peer.write("$10\r\nabc")
        }
        guard case .failure(.connection(.connectionLost(let reason))) = outcome else {
            Issue.record("expected a lost connection, got \(outcome)")
            return
        }
        #expect(reason.contains("closed"))
    }

    @Test func aHugeBulkLengthIsRefusedBeforeAnythingIsAllocated() throws {
        let outcome = try failsThenRecovers(RedisFaultTests.answering("$99999999999999\r\n"), maxReplyBytes: 64 << 10)
        #expect(
            outcome
                == .failure(.connection(.protocolViolation(.bulkTooLong(length: 99_999_999_999_999, limit: 64 << 10))))
        )
    }

    @Test func anEndlessAggregateIsCutAtTheReplyCap() throws {
        // 1,000,000 elements announced, 400 KB of them sent: the client must stop at its 64 KiB cap.
        let outcome = try failsThenRecovers(
            { peer in
                guard peer.handshake(), peer.readCommand() != nil else { return }
                guard peer.write("*1000000\r\n") else { return }
                let chunk = String(repeating: ":1\r\n", count: 1000)
                for _ in 0..<100 {
                    guard peer.write(chunk, timeout: .seconds(2)) else { break }
                }
                _ = peer.waitForClose()
            },
            maxReplyBytes: 64 << 10
        )
        #expect(outcome == .failure(.connection(.protocolViolation(.valueTooLarge(limit: 64 << 10)))))
    }

    @Test func aReplyNobodyAskedForClosesTheConnection() throws {
        let fake = try FakeRedisServer(scripts: [
            { peer in
                guard peer.handshake() else { return }
                peer.write("+surprise\r\n")
                _ = peer.waitForClose()
            },
            RedisFaultTests.healthy,
        ])
        defer { fake.stop() }
        let harness = RedisHarness()
        defer { harness.close() }
        let redis = harness.connect(RedisHarness.configuration(port: fake.port))
        try harness.waitForStatus(redis, "the unrequested reply refused") {
            if case .reconnecting(_, let lastError) = $0 { return lastError.contains("no command was waiting") }
            return false
        }
        try harness.waitForStatus(redis, "the second connection") { $0 == .connected }
        #expect(try harness.request(redis, RESPCommand("PING")) == .simpleString("PONG"))
    }

    @Test func aServerWithoutRESP3IsRefusedWithItsCauseWhenRESP3IsRequired() throws {
        let fake = try FakeRedisServer(scripts: [
            { peer in
                // A Redis before 6: HELLO is an unknown command.
                guard peer.readCommand()?.first?.uppercased() == "HELLO" else { return }
                peer.write("-ERR unknown command 'HELLO', with args beginning with: '3' \r\n")
                _ = peer.waitForClose()
            },
            RedisFaultTests.healthy,
        ])
        defer { fake.stop() }
        let harness = RedisHarness()
        defer { harness.close() }
        var configuration = RedisHarness.configuration(port: fake.port)
        configuration.requiresRESP3 = true
        let redis = harness.connect(configuration)
        try harness.waitForStatus(redis, "the RESP2 server refused") {
            if case .reconnecting(_, let lastError) = $0 { return lastError.contains("Redis 6 or later") }
            return false
        }
        // The next server speaks RESP3: the same connection comes up and answers.
        try harness.waitForStatus(redis, "the second connection") { $0 == .connected }
        #expect(try harness.request(redis, RESPCommand("PING")) == .simpleString("PONG"))
    }

    @Test func aCommandWithoutReplyTimesOut() throws {
        let start = ContinuousClock.now
        let outcome = try failsThenRecovers(
            { peer in
                guard peer.handshake(), peer.readCommand() != nil else { return }
                _ = peer.waitForClose(timeout: .seconds(10))
            },
            commandTimeout: .milliseconds(200)
        )
        #expect(outcome == .failure(.connection(.timedOut(limit: .milliseconds(200)))))
        #expect(ContinuousClock.now - start < .seconds(10), "the timeout, not the script's deadline, ended it")
    }

    @Test func aServerThatNeverAnswersTheHandshakeTimesOut() throws {
        let outcome = try failsThenRecovers(
            { peer in
                _ = peer.waitForClose(timeout: .seconds(10))
            },
            connectTimeout: .milliseconds(200)
        )
        #expect(outcome == .failure(.connection(.connectTimedOut(limit: .milliseconds(200)))))
    }

    @Test func nobodyListeningFailsFastAndKeepsRetrying() throws {
        let port = try #require(RedisServer.freePort())
        let harness = RedisHarness()
        defer { harness.close() }
        let redis = harness.connect(RedisHarness.configuration(port: port))
        try harness.waitForStatus(redis, "the second refused attempt") {
            if case .reconnecting(let failures, let lastError) = $0 {
                return failures >= 2 && lastError.contains("refused")
            }
            return false
        }
        let start = ContinuousClock.now
        let outcome = try harness.result(redis, RESPCommand("PING"))
        #expect(ContinuousClock.now - start < .seconds(2))
        switch outcome {
        case .failure(.connection(.notConnected)), .failure(.connection(.connectionLost)):
            break
        default:
            Issue.record("expected a connection error at once, got \(outcome)")
        }
    }

    /// Sends a command again from every completion, on the loop, until `limit` completions.
    private final class Resender: Sendable {
        let redis: RedisConnection
        let limit: Int
        let count = TestBox(0)
        let done = TestSignal()

        init(redis: RedisConnection, limit: Int) {
            self.redis = redis
            self.limit = limit
        }

        func send() {
            redis.send(RESPCommand("PING")) { _ in
                let count = self.count.update { count -> Int in
                    count += 1
                    return count
                }
                if count == self.limit { self.done.signal() } else if count < self.limit { self.send() }
            }
        }
    }

    @Test func completionsThatSendAgainNeitherRecurseNorHoldTheLoop() throws {
        let port = try #require(RedisServer.freePort())
        let harness = RedisHarness()
        defer { harness.close() }
        let redis = harness.connect(RedisHarness.configuration(port: port))
        try harness.waitForStatus(redis, "refused") {
            if case .reconnecting = $0 { return true }
            return false
        }
        // Each failure comes back inline on the loop and sends again: 50,000 deep if it recursed.
        let resender = Resender(redis: redis, limit: 50_000)
        resender.send()
        // Meanwhile the loop serves other work.
        let other = TestSignal()
        harness.loop.execute { other.signal() }
        #expect(other.wait(timeout: .seconds(10)))
        #expect(resender.done.wait(timeout: .seconds(30)))
        #expect(resender.count.value == 50_000)
        #expect(redis.metrics.commandsFailed == 50_000)
    }

    @Test func aServerThatStopsReadingFillsTheWriteBufferOnlyToItsCap() throws {
        let release = TestSignal()
        let fake = try FakeRedisServer(scripts: [
            { peer in
                guard peer.handshake() else { return }
                peer.holdWithoutReading(until: release)
            }
        ])
        defer { fake.stop() }
        defer { release.signal() }
        let harness = RedisHarness()
        defer { harness.close() }
        var configuration = RedisHarness.configuration(port: fake.port)
        configuration.maxOutboundBytes = 1 << 20
        let redis = try harness.ready(configuration)
        // 48 MiB of commands against 1 MiB held by the client plus what the kernel's buffers take (a few MiB).
        let payload = [UInt8](repeating: 0x78, count: 512 << 10)
        let failures = TestBox(0)
        let outcomes = TestBox(0)
        let all = TestSignal()
        for _ in 0..<96 {
            var command = RESPCommand("SET", "big")
            command.append(payload)
            redis.send(command) { result in
                if case .failure(.writeBufferFull(limit: 1 << 20)) = result {
                    failures.update { $0 += 1 }
                }
                if outcomes.update({ count -> Int in
                    count += 1
                    return count
                }) == 96 {
                    all.signal()
                }
            }
        }
        #expect(eventually { failures.value >= 48 }, "failed at once: \(failures.value)")
        redis.close()
        #expect(all.wait(timeout: .seconds(10)), "the rest fail when closed")
        #expect(redis.metrics.commandsFailed == 96)
    }

    @Test func commandsBeyondThePendingLimitFailAtOnce() throws {
        let fake = try FakeRedisServer(scripts: [
            { peer in
                // Never answers the handshake: every command stays queued.
                _ = peer.waitForClose(timeout: .seconds(10))
            }
        ])
        defer { fake.stop() }
        let harness = RedisHarness()
        defer { harness.close() }
        let redis = harness.connect(RedisHarness.configuration(port: fake.port, maxPendingCommands: 3))
        let futures = (0..<4).map { _ in redis.send(RESPCommand("PING")) }
        #expect(try harness.result(futures[3]) == .failure(.connection(.tooManyPendingCommands(limit: 3))))
        redis.close()
        for future in futures.prefix(3) {
            let outcome = try harness.result(future)
            #expect(outcome == .failure(.connection(.closed)), "\(outcome)")
        }
    }
}
