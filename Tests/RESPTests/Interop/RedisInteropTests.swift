import RESP
import TestSupport
import Testing

/// The parser, the encoder and the connection state machine against a real `redis-server`, over loopback.
///
/// Each test starts its own server on a free port with a temporary directory and kills it at the end. Skipped when
/// no `redis-server` is installed (so `swift test` needs only the toolchain), unless `SPOUT_REQUIRE_REDIS` is set,
/// as CI does: then a server that cannot start fails the test. The time limit, three minutes per test (it counts
/// the wait for an `offPool` slot), stretches with the other waits under sanitizers (`TestTiming`).
@Suite(.offPool, .enabled(if: RedisServer.testsEnabled), .timeLimit(.minutes(3 * TestTiming.scale)))
struct RedisInteropTests {
    private func ready(_ server: RedisServer, _ configuration: RESPConnectionStateMachine<Int>.Configuration = .init())
        throws -> BlockingRedisDriver
    {
        let driver = BlockingRedisDriver(port: server.port, configuration: configuration)
        try driver.pump(until: "the handshake") { $0.readyCount == 1 }
        return driver
    }

    @Test func helloThreeThenPipelinedStringsAndNumbers() throws {
        let server = try RedisServer.start()
        defer { server.stop() }
        let driver = try ready(server, .init(clientName: "spout-interop"))
        #expect(driver.machine.protocolVersion == 3)

        let binary = (0...255).map { UInt8($0) } + "\r\n".bytes
        var set = RESPCommand("SET", "bin")
        set.append(binary)
        let ids = [
            driver.send(RESPCommand("SET", "greeting", "hello")),
            driver.send(.get("greeting")),
            driver.send(set),
            driver.send(.get("bin")),
            driver.send(RESPCommand("INCR", "n")),
            driver.send(RESPCommand("INCRBY", "n", "41")),
            driver.send(.get("missing")),
            driver.send(RESPCommand("HSET", "h", "a", "1", "b", "2")),
            driver.send(RESPCommand("HGETALL", "h")),
            driver.send(RESPCommand("INCR", "greeting")),
            driver.send(RESPCommand("CLIENT", "GETNAME")),
        ]
        try driver.pump(until: "every reply") { driver in ids.allSatisfy { driver.replies[$0] != nil } }
        #expect(
            ids.map { driver.replies[$0]! }
                == [
                    .simpleString("OK"), .bulkString("hello"), .simpleString("OK"), .bulkString(binary), .integer(1),
                    .integer(42), .null, .integer(2),
                    .map([.init(.bulkString("a"), .bulkString("1")), .init(.bulkString("b"), .bulkString("2"))]),
                    .error("ERR value is not an integer or out of range"), .bulkString("spout-interop"),
                ]
        )
        #expect(try driver.request(RESPCommand("DBSIZE")) == .integer(4))
        #expect(try driver.request(RESPCommand("EXISTS", "greeting", "nope")) == .integer(1))
        guard case .double(let score) = try driver.request(RESPCommand("ZINCRBY", "z", "1.5", "m")) else {
            Issue.record("ZINCRBY under RESP3 should answer a double")
            return
        }
        #expect(score == 1.5)
        #expect(driver.closes.isEmpty)
    }

    @Test func streamsAppendAndRangeWithTheirOwnIDs() throws {
        let server = try RedisServer.start()
        defer { server.stop() }
        let driver = try ready(server)
        var ids: [[UInt8]] = []
        for index in 0..<5 {
            let reply = try driver.request(
                RESPCommand("XADD", "events", "MAXLEN", "~", "1000", "*", "data", "{\"n\":\(index)}", "event", "tick")
            )
            let id = try #require(reply.bytes, "XADD answers the new id, got \(reply)")
            ids.append(id)
        }
        #expect(ids.count == Set(ids).count)
        let range = try driver.request(RESPCommand("XRANGE", "events", "-", "+"))
        let expected = RESPValue.array(
            ids.enumerated().map { index, id in
                .array([
                    .bulkString(id),
                    .array([
                        .bulkString("data"), .bulkString("{\"n\":\(index)}"), .bulkString("event"), .bulkString("tick"),
                    ]),
                ])
            }
        )
        #expect(range == expected)
        var after = RESPCommand("XRANGE", "events")
        after.append([UInt8(ascii: "(")] + ids[2])
        after.append("+")
        #expect(try driver.request(after).elements?.count == 2, "an exclusive start resumes after an id")
        #expect(try driver.request(RESPCommand("XLEN", "events")) == .integer(5))
        let read = try driver.request(RESPCommand("XREAD", "COUNT", "1", "STREAMS", "events", "0"))
        guard case .map(let streams) = read, streams.first?.key == .bulkString("events") else {
            Issue.record("XREAD under RESP3 should answer a map of streams, got \(read)")
            return
        }
    }

    @Test func subscribersGetPublishedMessagesAsPushes() throws {
        let server = try RedisServer.start()
        defer { server.stop() }
        let subscriber = try ready(server)
        let publisher = try ready(server)

        let subscribe = subscriber.send(RESPCommand("SUBSCRIBE", "news", "alerts"))
        let psubscribe = subscriber.send(RESPCommand("PSUBSCRIBE", "news.*"))
        try subscriber.pump(until: "the confirmations") { $0.replies[psubscribe] != nil }
        #expect(
            subscriber.replies[subscribe]
                == .array([
                    .push([.bulkString("subscribe"), .bulkString("news"), .integer(1)]),
                    .push([.bulkString("subscribe"), .bulkString("alerts"), .integer(2)]),
                ])
        )

        #expect(try publisher.request(RESPCommand("PUBLISH", "news", "one")) == .integer(1))
        #expect(try publisher.request(RESPCommand("PUBLISH", "news.eu", "two")) == .integer(1))
        var binary = RESPCommand("PUBLISH", "alerts")
        binary.append([0x00, 0xFF, 0x0D, 0x0A])
        #expect(try publisher.request(binary) == .integer(1))
        #expect(try publisher.request(RESPCommand("PUBLISH", "nobody", "x")) == .integer(0))

        // RESP3 lets a subscribed connection run ordinary commands between the pushes.
        #expect(try subscriber.request(RESPCommand("PING")) == .simpleString("PONG"))
        try subscriber.pump(until: "three messages") { $0.pushes.count == 3 }
        #expect(
            subscriber.pushes == [
                .message(channel: "news".bytes, payload: "one".bytes),
                .patternMessage(pattern: "news.*".bytes, channel: "news.eu".bytes, payload: "two".bytes),
                .message(channel: "alerts".bytes, payload: [0x00, 0xFF, 0x0D, 0x0A]),
            ]
        )

        let unsubscribe = try subscriber.request(RESPCommand("UNSUBSCRIBE"))
        #expect(unsubscribe.elements?.count == 2)
        #expect(subscriber.machine.subscriptions.channels.isEmpty)
        #expect(subscriber.machine.subscriptions.patterns == ["news.*".bytes])
        #expect(try publisher.request(RESPCommand("PUBLISH", "news", "gone")) == .integer(0))
        #expect(subscriber.closes.isEmpty && publisher.closes.isEmpty)
    }

    @Test func authenticationAndDatabaseSelection() throws {
        let server = try RedisServer.start(arguments: ["--requirepass", "s3cret"])
        defer { server.stop() }

        let wrong = BlockingRedisDriver(port: server.port, configuration: .init(password: "nope", reconnect: .never))
        try wrong.pump(until: "the refusal") { !$0.closes.isEmpty }
        guard case .handshakeFailed("HELLO", let message)? = wrong.closes.first else {
            Issue.record("expected a refused HELLO, got \(wrong.closes)")
            return
        }
        #expect(message.hasPrefix("WRONGPASS"))

        let anonymous = BlockingRedisDriver(port: server.port, configuration: .init(reconnect: .never))
        try anonymous.pump(until: "the refusal") { !$0.closes.isEmpty }
        guard case .handshakeFailed("HELLO", let noauth)? = anonymous.closes.first else {
            Issue.record("expected a refused HELLO, got \(anonymous.closes)")
            return
        }
        #expect(noauth.hasPrefix("NOAUTH"))

        let url = try RedisURL(parsing: "redis://:s3cret@127.0.0.1:\(server.port)/3")
        let driver = try ready(server, .init(url: url))
        #expect(try driver.request(RESPCommand("SET", "where", "db3")) == .simpleString("OK"))
        #expect(try driver.request(RESPCommand("CLIENT", "INFO")).string?.contains(" db=3 ") == true)
        let other = try ready(server, .init(password: "s3cret"))
        #expect(try other.request(.get("where")) == .null, "database 0 does not see it")
        #expect(try other.request(RESPCommand("SELECT", "3")) == .simpleString("OK"))
        #expect(try other.request(.get("where")) == .bulkString("db3"))
    }

    @Test func aReplySlowerThanItsTimeoutFailsTheConnectionWhichComesBack() throws {
        let server = try RedisServer.start()
        defer { server.stop() }
        let driver = try ready(server)
        // BLPOP blocks this client for a second on the server; the command allows 200 ms.
        let slow = driver.send(RESPCommand("BLPOP", "empty", "1"), timeout: .some(.milliseconds(200)))
        let behind = driver.send(.get("k"))
        try driver.pump(until: "the timeout") { !$0.closes.isEmpty }
        #expect(driver.failures[slow] == .timedOut(limit: .milliseconds(200)))
        #expect(driver.failures[behind] == .timedOut(limit: .milliseconds(200)), "a pipeline cannot skip a reply")
        try driver.pump(until: "the reconnect") { $0.readyCount == 2 }
        #expect(try driver.request(RESPCommand("PING")) == .simpleString("PONG"))
    }

    @Test func aRestartedServerGetsTheSubscriptionsBack() throws {
        var server = try RedisServer.start()
        defer { server.stop() }
        let subscriber = try ready(server, .init(connectTimeout: .seconds(5)))
        let subscribed = subscriber.send(RESPCommand("SUBSCRIBE", "jobs"))
        try subscriber.pump(until: "the confirmation") { $0.replies[subscribed] != nil }
        let pending = subscriber.send(RESPCommand("BLPOP", "never", "0"), timeout: .some(nil))

        let port = server.port
        server.stop()
        try subscriber.pump(until: "the lost connection") { !$0.closes.isEmpty }
        #expect(subscriber.failures[pending] != nil, "a command in flight fails with the connection")
        guard case .connectionLost? = subscriber.closes.first else {
            Issue.record("expected connectionLost, got \(subscriber.closes)")
            return
        }

        server = try RedisServer.start(port: port)
        try subscriber.pump(until: "the reconnect", timeout: .seconds(10)) { $0.readyCount == 2 }
        #expect(subscriber.machine.subscriptions.channels == ["jobs".bytes])
        let publisher = try ready(server)
        #expect(try publisher.request(RESPCommand("PUBLISH", "jobs", "after restart")) == .integer(1))
        try subscriber.pump(until: "the message") { !$0.pushes.isEmpty }
        #expect(subscriber.pushes == [.message(channel: "jobs".bytes, payload: "after restart".bytes)])
    }
}
