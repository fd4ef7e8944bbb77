import Dispatch
import RESP
import Reactive
import Redis
import TestSupport
import Testing

/// ``RedisConnection`` against a real `redis-server` on a free loopback port with a temporary directory (see
/// `RedisServer` in TestSupport). Skipped without `redis-server` unless `SPOUT_REQUIRE_REDIS` is set, as CI does.
@Suite(.offPool, .enabled(if: RedisServer.testsEnabled), .timeLimit(.minutes(3 * TestTiming.scale)))
struct RedisConnectionTests {
    @Test func pipelinedCommandsAreAnsweredInOrder() throws {
        let server = try RedisServer.start()
        defer { server.stop() }
        let harness = RedisHarness()
        defer { harness.close() }
        // Not started yet: the commands queue, and all go out once the handshake is done.
        let redis = harness.connect(RedisHarness.configuration(port: server.port), start: false)
        let replies = TestBox<[Int64]>([])
        let done = TestSignal()
        let count = 2000
        for _ in 0..<count {
            redis.send(RESPCommand("INCR", "counter")) { result in
                let value = (try? result.get())?.integer ?? -1
                let total = replies.update { replies -> Int in
                    replies.append(value)
                    return replies.count
                }
                if total == count { done.signal() }
            }
        }
        redis.start()
        #expect(done.wait(timeout: .seconds(20)))
        #expect(replies.value == Array(1...Int64(count)))

        // Once ready, from several threads at once: each thread's commands keep their order.
        let perThread = 500
        let seen = TestBox<[Int: [Int64]]>([:])
        let all = TestSignal()
        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            for _ in 0..<perThread {
                redis.send(RESPCommand("INCR", "thread-\(thread)")) { result in
                    let value = (try? result.get())?.integer ?? -1
                    let finished = seen.update { seen -> Bool in
                        seen[thread, default: []].append(value)
                        return seen.values.reduce(0) { $0 + $1.count } == 4 * perThread
                    }
                    if finished { all.signal() }
                }
            }
        }
        #expect(all.wait(timeout: .seconds(20)))
        for thread in 0..<4 {
            #expect(seen.value[thread] == Array(1...Int64(perThread)))
        }

        // Replies of every kind, error replies included, each with its command.
        var binary = RESPCommand("SET", "bin")
        let bytes = (0...255).map { UInt8($0) }
        binary.append(bytes)
        let futures = [
            redis.send(RESPCommand("SET", "greeting", "hello")),
            redis.send(RESPCommand("GET", "greeting")),
            redis.send(RESPCommand("INCR", "greeting")),
            redis.send(binary),
            redis.send(RESPCommand("GET", "bin")),
            redis.send(RESPCommand("GET", "missing")),
        ]
        let results = try futures.map { try harness.result($0) }
        #expect(try results[0].get() == .simpleString("OK"))
        #expect(try results[1].get() == .bulkString("hello"))
        #expect(results[2] == .failure(.server("ERR value is not an integer or out of range")))
        #expect(try results[4].get() == .bulkString(bytes))
        #expect(try results[5].get().isNull)

        let metrics = redis.metrics
        #expect(metrics.commandsSent == count + 4 * perThread + futures.count)
        #expect(metrics.repliesReceived == metrics.commandsSent)
        #expect(metrics.errorReplies == 1)
        #expect(metrics.commandsFailed == 0)
        #expect(metrics.reconnects == 0)
        #expect(metrics.roundTrips >= 4 * perThread, "commands written on a ready connection are timed")
        #expect(metrics.roundTripMax >= metrics.roundTripLast)
    }

    @Test func authenticatesAndSelectsTheDatabaseFromTheURL() throws {
        let server = try RedisServer.start(arguments: ["--requirepass", "s3cr:et@"])
        defer { server.stop() }
        let harness = RedisHarness()
        defer { harness.close() }
        let url = try RedisURL(parsing: "redis://:s3cr%3Aet%40@127.0.0.1:\(server.port)/3")
        var configuration = RedisHarness.configuration(port: server.port)
        configuration.url = url
        let redis = try harness.ready(configuration)
        #expect(try harness.request(redis, RESPCommand("SET", "where", "three")) == .simpleString("OK"))
        let info = try harness.request(redis, RESPCommand("CLIENT", "INFO")).string ?? ""
        #expect(info.contains(" db=3 "), "CLIENT INFO: \(info)")

        let other = try harness.ready(RedisHarness.configuration(port: server.port, password: "s3cr:et@"))
        #expect(try harness.request(other, RESPCommand("GET", "where")).isNull, "database 0 does not hold it")
        #expect(try harness.request(other, RESPCommand("SELECT", "3")) == .simpleString("OK"))
        #expect(try harness.request(other, RESPCommand("GET", "where")) == .bulkString("three"))

        // A wrong password: the command queued during the handshake fails with the server's refusal, and the
        // client keeps trying (with backoff) rather than giving up.
        let wrong = harness.connect(RedisHarness.configuration(port: server.port, password: "nope"), start: false)
        let queued = wrong.send(RESPCommand("PING"))
        wrong.start()
        let failure = try harness.result(queued)
        guard case .failure(.connection(.handshakeFailed(let command, let message))) = failure else {
            Issue.record("expected a refused handshake, got \(failure)")
            return
        }
        #expect(command == "HELLO")
        #expect(message.hasPrefix("WRONGPASS"))
        try harness.waitForStatus(wrong, "a second failed attempt") {
            if case .reconnecting(let failures, let lastError) = $0 {
                return failures >= 2 && lastError.contains("WRONGPASS")
            }
            return false
        }
        #expect(wrong.metrics.connectionFailures >= 2)
    }

    @Test func streamsAppendReadAndBlock() throws {
        let server = try RedisServer.start()
        defer { server.stop() }
        let harness = RedisHarness()
        defer { harness.close() }
        let redis = try harness.ready(RedisHarness.configuration(port: server.port))
        let reader = try harness.ready(RedisHarness.configuration(port: server.port))

        var ids: [String] = []
        for index in 0..<5 {
            let fields = [RedisStreamField("data", "{\"n\":\(index)}"), RedisStreamField("event", [0, 0xFF, 0x0A])]
            ids.append(try harness.result(redis.xadd("events", maxLength: 1000, fields: fields)).get())
        }
        #expect(Set(ids).count == 5)
        let all = try harness.result(redis.xrange("events")).get()
        #expect(all.map(\.id) == ids)
        #expect(all[2][field: "data"] == "{\"n\":2}".bytes)
        #expect(all[2][field: "event"] == [0, 0xFF, 0x0A])
        #expect(all[2][field: "absent"] == nil)
        let newest = try harness.result(redis.xrevrange("events", count: 2)).get()
        #expect(newest.map(\.id) == [ids[4], ids[3]])
        let after = try harness.result(redis.xrange("events", from: "(" + ids[2])).get()
        #expect(after.map(\.id) == [ids[3], ids[4]])
        #expect(try harness.result(redis.xrange("nothing")).get().isEmpty)

        // The cap: MAXLEN ~ trims whole nodes, so about (not exactly) the cap stays.
        for index in 0..<300 {
            _ = redis.xadd("capped", maxLength: 100, fields: [RedisStreamField("n", "\(index)")])
        }
        let length = try harness.request(redis, RESPCommand("XLEN", "capped")).integer ?? 0
        #expect(length >= 100 && length < 300, "XLEN after 300 adds capped at ~100: \(length)")

        // A blocking read on a connection of its own wakes for an entry added after it started.
        let blocked = reader.xread([(key: "events", after: ids[4])], block: .seconds(10))
        #expect(
            try eventually {
                try harness.request(redis, RESPCommand("INFO", "clients")).string?.contains("blocked_clients:1") == true
            }
        )
        let added = try harness.result(redis.xadd("events", fields: [RedisStreamField("data", "late")])).get()
        let read = try harness.result(blocked).get()
        #expect(read.count == 1)
        #expect(read.first?.key == "events".bytes)
        #expect(read.first?.entries.map(\.id) == [added])
        #expect(read.first?.entries.first?[field: "data"] == "late".bytes)

        // A block that ends without an entry answers empty, not a timeout.
        #expect(try harness.result(reader.xread([(key: "events", after: "$")], block: .milliseconds(50))).get() == [])
        // Without BLOCK, from the start.
        let fromStart = try harness.result(reader.xread([(key: "events", after: "0")], count: 2)).get()
        #expect(fromStart.first?.entries.map(\.id) == Array(ids.prefix(2)))

        // A reply of the wrong shape for the typed call.
        _ = try harness.request(redis, RESPCommand("SET", "plain", "x"))
        #expect(
            try harness.result(redis.xrange("plain"))
                == .failure(
                    .server(
                        "WRONGTYPE Operation against a key holding the wrong kind of value"
                    )
                )
        )
    }

    @Test func aBlockingReadLongerThanTheCommandTimeoutIsNotCutShort() throws {
        let server = try RedisServer.start(arguments: ["--enable-debug-command", "local"])
        defer { server.stop() }
        let harness = RedisHarness()
        defer { harness.close() }
        let reader = try harness.ready(
            RedisHarness.configuration(port: server.port, commandTimeout: .milliseconds(100))
        )
        let start = ContinuousClock.now
        // Blocks 400 ms, four times the command timeout: the read's own timeout is the block plus at least 1 s.
        let read = try harness.result(reader.xread([(key: "quiet", after: "$")], block: .milliseconds(400)))
        #expect(read == .success([]))
        #expect(ContinuousClock.now - start >= .milliseconds(400))
        #expect(reader.status == .connected)
        #expect(reader.metrics.roundTrips == 0, "a blocking read is not a round trip")
        // A plain command on the same connection still has the short timeout: DEBUG SLEEP outlasts it.
        let slept = try harness.result(reader, RESPCommand("DEBUG", "SLEEP", "0.5"))
        #expect(slept == .failure(.connection(.timedOut(limit: .milliseconds(100)))))
    }

    @Test func publishedMessagesArriveAsPushes() throws {
        let server = try RedisServer.start()
        defer { server.stop() }
        let harness = RedisHarness()
        defer { harness.close() }
        let subscriber = try harness.ready(RedisHarness.configuration(port: server.port))
        let publisher = try harness.ready(RedisHarness.configuration(port: server.port))
        let (pushes, pushed) = harness.collectPushes(subscriber)

        try harness.result(subscriber.subscribe(["news", "alerts"])).get()
        #expect(try harness.result(publisher.publish("news", "one".bytes)).get() == 1)
        #expect(try harness.result(publisher.publish("alerts", [0, 0x0D, 0x0A])).get() == 1)
        #expect(try harness.result(publisher.publish("nobody", "x".bytes)).get() == 0)
        // RESP3: the subscribed connection still answers ordinary commands.
        #expect(try harness.request(subscriber, RESPCommand("PING")) == .simpleString("PONG"))
        try harness.waitForPushes(pushes, pushed, count: 2)
        #expect(
            pushes.value == [
                .message(channel: "news".bytes, payload: "one".bytes),
                .message(channel: "alerts".bytes, payload: [0, 0x0D, 0x0A]),
            ]
        )
        try harness.result(subscriber.unsubscribe(["alerts"])).get()
        #expect(try harness.result(publisher.publish("alerts", "x".bytes)).get() == 0)
    }

    @Test func aKilledServerFailsCommandsAndTheClientComesBackWithItsSubscriptions() throws {
        var server = try RedisServer.start()
        defer { server.stop() }
        let port = server.port
        let harness = RedisHarness()
        defer { harness.close() }
        let redis = try harness.ready(RedisHarness.configuration(port: port))
        let subscriber = try harness.ready(RedisHarness.configuration(port: port))
        let (pushes, pushed) = harness.collectPushes(subscriber)
        try harness.result(subscriber.subscribe(["news"])).get()

        // A command in flight when the server dies: BLPOP, seen blocked by the server first.
        let blocking = try harness.ready(RedisHarness.configuration(port: port))
        let inFlight = blocking.send(RESPCommand("BLPOP", "never", "0"))
        #expect(
            try eventually {
                try harness.request(redis, RESPCommand("INFO", "clients")).string?.contains("blocked_clients:1") == true
            }
        )
        server.stop()

        let lost = try harness.result(inFlight)
        guard case .failure(.connection(.connectionLost(let reason))) = lost else {
            Issue.record("the command in flight should fail with the lost connection, got \(lost)")
            return
        }
        #expect(!reason.isEmpty)
        try harness.waitForStatus(redis, "reconnecting") {
            if case .reconnecting = $0 { return true }
            return false
        }
        // While the server is away: a clear error at once, nothing queued without bound.
        let start = ContinuousClock.now
        let failed = try harness.result(redis, RESPCommand("GET", "x"))
        #expect(ContinuousClock.now - start < .seconds(2), "fails fast, not after a timeout")
        switch failed {
        case .failure(.connection(.notConnected)), .failure(.connection(.connectionLost)):
            #expect(try #require(failed.failure).description.contains("redis"))
        default:
            Issue.record("a command while the server is down should fail with a connection error, got \(failed)")
        }

        // Back on the same port: every connection reconnects, and the subscription is restored.
        server = try RedisServer.start(port: port)
        try harness.waitForStatus(redis, "connected again") { $0 == .connected }
        try harness.waitForStatus(subscriber, "subscriber connected again") { $0 == .connected }
        #expect(redis.metrics.reconnects == 1)
        #expect(redis.metrics.connectionFailures >= 1)
        #expect(try harness.request(redis, RESPCommand("SET", "x", "1")) == .simpleString("OK"))
        #expect(try harness.result(redis.publish("news", "back".bytes)).get() == 1)
        try harness.waitForPushes(pushes, pushed, count: 1)
        #expect(pushes.value == [.message(channel: "news".bytes, payload: "back".bytes)])
    }

    @Test func aHostNameIsResolvedOffTheLoopAndEachAddressTried() throws {
        let server = try RedisServer.start()
        defer { server.stop() }
        let harness = RedisHarness()
        defer { harness.close() }
        var configuration = RedisHarness.configuration(port: server.port)
        // localhost may resolve to ::1 first, where nothing listens: the client goes on to 127.0.0.1.
        configuration.url = RedisURL(host: "localhost", port: server.port)
        let redis = try harness.ready(configuration)
        #expect(try harness.request(redis, RESPCommand("PING")) == .simpleString("PONG"))
        #expect(redis.metrics.connectionFailures == 0)
    }

    @Test func closingFailsWhatWaitsAndEverythingAfter() throws {
        let server = try RedisServer.start()
        defer { server.stop() }
        let harness = RedisHarness()
        defer { harness.close() }
        let redis = try harness.ready(RedisHarness.configuration(port: server.port))
        let blocked = redis.send(RESPCommand("BLPOP", "never", "0"))
        redis.close()
        #expect(try harness.result(blocked) == .failure(.connection(.closed)))
        #expect(try harness.result(redis, RESPCommand("PING")) == .failure(.connection(.closed)))
        try harness.waitForStatus(redis, "closed") { $0 == .closed }
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
