import Dispatch
import EventLoops
import Foundation
import Glibc
import OpenSSL
import RESP
import Reactive
import Redis
import TestSupport
import Testing

/// ``RedisConnection`` over `rediss://` against a real `redis-server` started with `--tls-port` and certificates
/// made by the tests with the `openssl` tool (`TestCertificates`): commands, pub/sub and reconnects over TLS, a
/// client certificate, and the failures a client must refuse (an untrusted CA, a wrong host name, an expired
/// certificate, a server that stalls the handshake, a plain-TCP port). Skipped without `redis-server` or `openssl`
/// unless `SPOUT_REQUIRE_REDIS` or `SPOUT_REQUIRE_OPENSSL` is set, as CI does.
@Suite(.offPool, .enabled(if: RedisServer.tlsTestsEnabled), .timeLimit(.minutes(3 * TestTiming.scale)))
struct RedisTLSTests {
    /// A fast-reconnecting `rediss://` configuration for `host:port`, trusting the test root CA (or `trust`).
    private static func configuration(
        host: String = "localhost",
        port: Int,
        trust: TLSClientConfiguration.Trust? = nil,
        clientIdentity: TestCertificates.Identity? = nil,
        connectTimeout: Duration = .seconds(5)
    ) throws -> RedisConfiguration {
        let pki = try TestCertificates.shared()
        let context = try TLSContext(
            client: TLSClientConfiguration(
                trust: trust ?? .caFile(pki.rootCertificateFile),
                certificateFile: clientIdentity?.certificateFile,
                privateKeyFile: clientIdentity?.privateKeyFile
            )
        )
        return RedisConfiguration(
            url: RedisURL(host: host, port: port, usesTLS: true),
            clientName: "spout-redis-tls-tests",
            connectTimeout: connectTimeout,
            reconnect: RESPReconnectPolicy(initialDelay: .milliseconds(20), maxDelay: .milliseconds(200)),
            tls: context
        )
    }

    /// A TLS redis-server with `identity`'s certificate chain.
    private static func server(
        _ identity: TestCertificates.Identity? = nil,
        authClients: Bool = false
    ) throws -> RedisServer {
        let pki = try TestCertificates.shared()
        let identity = identity ?? pki.server
        return try RedisServer.startTLS(
            certificateFile: identity.certificateFile,
            privateKeyFile: identity.privateKeyFile,
            caFile: pki.rootCertificateFile,
            authClients: authClients
        )
    }

    /// Waits until `redis` has failed `count` attempts in a row, the last one for a reason that holds `text`;
    /// returns that reason.
    @discardableResult
    private static func waitForFailures(
        _ harness: RedisHarness,
        _ redis: RedisConnection,
        count: Int = 2,
        containing text: String
    ) throws -> String {
        try harness.waitForStatus(redis, "\(count) failures with \"\(text)\"") {
            if case .reconnecting(let failures, let lastError) = $0 {
                return failures >= count && lastError.contains(text)
            }
            return false
        }
        guard case .reconnecting(_, let lastError) = redis.status else { return "" }
        return lastError
    }

    @Test func commandsAndPubSubRunOverTLS() throws {
        let server = try Self.server()
        defer { server.stop() }
        let port = try #require(server.tlsPort)
        let harness = RedisHarness()
        defer { harness.close() }

        let redis = try harness.ready(try Self.configuration(port: port))
        let session = try #require(redis.tlsSession)
        #expect(["TLSv1.2", "TLSv1.3"].contains(session.protocolVersion))
        #expect(redis.metrics.tlsHandshakes == [session.protocolVersion: 1])
        #expect(redis.metrics.tlsHandshakeFailures.isEmpty)
        #expect(session.serverName == "localhost", "the URL's host is sent as SNI")

        // Pipelined commands, a binary value, an error reply: as over plain TCP.
        let futures = (0..<500).map { _ in redis.send(RESPCommand("INCR", "counter")) }
        let counts = try futures.map { try harness.result($0).get().integer }
        #expect(counts == (1...500).map { Int64($0) })
        var binary = RESPCommand("SET", "bin")
        let bytes = (0...255).map { UInt8($0) }
        binary.append(bytes)
        #expect(try harness.request(redis, binary) == .simpleString("OK"))
        #expect(try harness.request(redis, RESPCommand("GET", "bin")) == .bulkString(bytes))
        // A value larger than one TLS record and than the loop's read buffer, both ways.
        let large = [UInt8](repeating: UInt8(ascii: "x"), count: 300_000)
        var setLarge = RESPCommand("SET", "large")
        setLarge.append(large)
        #expect(try harness.request(redis, setLarge) == .simpleString("OK"))
        #expect(try harness.request(redis, RESPCommand("GET", "large")) == .bulkString(large))
        #expect(
            try harness.result(redis, RESPCommand("INCR", "bin"))
                == .failure(.server("ERR value is not an integer or out of range"))
        )
        // What went over TLS is in the server: read back over its plain port.
        #expect(try server.command(["GET", "counter"]) == "500")

        // Pub/sub: a subscriber on one TLS connection hears what another publishes.
        let subscriber = try harness.ready(try Self.configuration(port: port))
        let (pushes, pushed) = harness.collectPushes(subscriber)
        _ = try harness.result(subscriber.subscribe(["news"])).get()
        #expect(try harness.result(redis.publish("news", "hello".bytes)).get() == 1)
        try harness.waitForPushes(pushes, pushed, count: 1)
        #expect(pushes.value.first == .message(channel: "news".bytes, payload: "hello".bytes))
        #expect(redis.metrics.connectionFailures == 0)
    }

    @Test func anIPAddressIsVerifiedAgainstTheCertificateAndSentWithoutSNI() throws {
        let server = try Self.server()
        defer { server.stop() }
        let harness = RedisHarness()
        defer { harness.close() }
        let redis = try harness.ready(try Self.configuration(host: "127.0.0.1", port: try #require(server.tlsPort)))
        #expect(try harness.request(redis, RESPCommand("PING")) == .simpleString("PONG"))
        #expect(redis.tlsSession?.serverName == nil, "SNI carries host names only (RFC 6066)")
    }

    @Test func itReconnectsOverTLSAfterTheServerRestarts() throws {
        var server = try Self.server()
        defer { server.stop() }
        let harness = RedisHarness()
        defer { harness.close() }
        let redis = try harness.ready(try Self.configuration(port: try #require(server.tlsPort)))
        let subscriber = try harness.ready(try Self.configuration(port: try #require(server.tlsPort)))
        let (pushes, pushed) = harness.collectPushes(subscriber)
        _ = try harness.result(subscriber.subscribe(["news"])).get()
        #expect(try harness.request(redis, RESPCommand("SET", "kept", "yes")) == .simpleString("OK"))

        try server.kill(keepingData: true)
        try harness.waitForStatus(redis, "reconnecting") {
            if case .reconnecting = $0 { return true }
            return false
        }
        server = try server.restarted()
        try harness.waitForStatus(redis, "connected again") { $0 == .connected }
        try harness.waitForStatus(subscriber, "connected again") { $0 == .connected }
        #expect(try harness.request(redis, RESPCommand("GET", "kept")) == .bulkString("yes"))
        #expect(redis.metrics.reconnects == 1)
        #expect(redis.tlsSession != nil)
        // The subscription was restored over the new TLS connection.
        #expect(try harness.result(redis.publish("news", "again".bytes)).get() == 1)
        try harness.waitForPushes(pushes, pushed, count: 1)
        #expect(pushes.value.last == .message(channel: "news".bytes, payload: "again".bytes))
    }

    @Test func aClientCertificateIsPresentedWhenTheServerAsksForOne() throws {
        let pki = try TestCertificates.shared()
        let server = try Self.server(authClients: true)
        defer { server.stop() }
        let port = try #require(server.tlsPort)
        let harness = RedisHarness()
        defer { harness.close() }

        // Without one, redis-server refuses the handshake: an alert, or the connection closed.
        let refused = harness.connect(try Self.configuration(port: port))
        try Self.waitForFailures(harness, refused, containing: "tls")
        // Refused with an alert, or the connection closed before it was read: counted either way, with its reason.
        let failures = refused.metrics.tlsHandshakeFailures
        #expect(failures.values.reduce(0, +) >= 2, "\(failures)")
        #expect(Set(failures.keys).isSubset(of: ["alert_received", RedisConnectionMetrics.tlsAbandonedReason]))
        refused.close()

        let redis = try harness.ready(try Self.configuration(port: port, clientIdentity: pki.client))
        #expect(try harness.request(redis, RESPCommand("PING")) == .simpleString("PONG"))
    }

    @Test func anUntrustedCertificateIsRefused() throws {
        let pki = try TestCertificates.shared()
        let server = try Self.server(pki.untrusted)
        defer { server.stop() }
        let harness = RedisHarness()
        defer { harness.close() }
        let redis = harness.connect(try Self.configuration(port: try #require(server.tlsPort)))
        let reason = try Self.waitForFailures(harness, redis, containing: "untrusted_certificate")
        #expect(reason.contains("tls handshake with localhost:"), "\(reason)")
        #expect(redis.metrics.tlsHandshakeFailures["untrusted_certificate", default: 0] >= 2)
        #expect(redis.metrics.tlsHandshakes.isEmpty)
        #expect(redis.tlsSession == nil)
        let outcome = try harness.result(redis, RESPCommand("PING"))
        #expect(outcome != .success(.simpleString("PONG")))
    }

    @Test func theSystemStoreDoesNotTrustATestCA() throws {
        let server = try Self.server()
        defer { server.stop() }
        let harness = RedisHarness()
        defer { harness.close() }
        let redis = harness.connect(try Self.configuration(port: try #require(server.tlsPort), trust: .system))
        try Self.waitForFailures(harness, redis, containing: "untrusted_certificate")
    }

    @Test func aCertificateForAnotherHostIsRefused() throws {
        let pki = try TestCertificates.shared()
        let server = try Self.server(pki.otherHost)
        defer { server.stop() }
        let harness = RedisHarness()
        defer { harness.close() }
        let redis = harness.connect(try Self.configuration(port: try #require(server.tlsPort)))
        try Self.waitForFailures(harness, redis, containing: "hostname_mismatch")
    }

    @Test func anExpiredCertificateIsRefused() throws {
        let pki = try TestCertificates.shared()
        let server = try Self.server(pki.expired)
        defer { server.stop() }
        let harness = RedisHarness()
        defer { harness.close() }
        let redis = harness.connect(try Self.configuration(port: try #require(server.tlsPort)))
        try Self.waitForFailures(harness, redis, containing: "certificate_expired")
    }

    @Test func aServerThatStallsTheHandshakeIsGivenUpAtTheConnectTimeout() throws {
        // A listener that never accepts: the kernel completes the TCP handshake, and the ClientHello is never read.
        let listener = try LoopbackListener.open()
        defer { close(listener.fd) }
        let harness = RedisHarness()
        defer { harness.close() }
        let start = ContinuousClock.now
        let redis = harness.connect(
            try Self.configuration(port: listener.port, connectTimeout: .milliseconds(300))
        )
        try Self.waitForFailures(harness, redis, count: 2, containing: "longer than 0.3 seconds, in the tls handshake")
        #expect(ContinuousClock.now - start < .seconds(10))
        #expect(redis.metrics.tlsHandshakeFailures[RedisConnectionMetrics.tlsTimeoutReason, default: 0] >= 2)
        #expect(redis.metrics.tlsHandshakeFailures.keys.allSatisfy { $0 == RedisConnectionMetrics.tlsTimeoutReason })
    }

    @Test func aPlainRedisPortOnARedissURLFailsAtTheConnectTimeoutAndSaysWhy() throws {
        // Plain Redis reads the ClientHello as the start of an inline command and waits for its line's end: the
        // handshake stalls, and the timeout names the TLS handshake.
        let server = try RedisServer.start()
        defer { server.stop() }
        let harness = RedisHarness()
        defer { harness.close() }
        let redis = harness.connect(try Self.configuration(port: server.port, connectTimeout: .milliseconds(300)))
        try Self.waitForFailures(harness, redis, containing: "in the tls handshake (is the port a tls port?)")
        #expect(redis.tlsSession == nil)
    }

    @Test func aRedissURLWithoutATLSContextSaysSo() throws {
        let server = try Self.server()
        defer { server.stop() }
        let harness = RedisHarness()
        defer { harness.close() }
        var configuration = try Self.configuration(port: try #require(server.tlsPort))
        configuration.tls = nil
        let redis = harness.connect(configuration)
        try Self.waitForFailures(harness, redis, containing: "needs a tls context")
    }

    @Test func aReadStalledOnAFullTLSOutputLeavesTheSocketUnwatchedUntilTheOutputDrains() throws {
        // A TLS 1.3 server that answers HELLO, then never reads again and sends KeyUpdates that each ask the client
        // for one back. The client's commands fill the kernel's buffers, so its answers pile up in the engine's
        // output until it is full; decryption then waits for that output to drain, and the engine's input fills.
        // The socket stays readable; the poller is level-triggered, so a connection that kept watching it would be
        // woken on every turn of the loop, reading nothing (baa0c58).
        let pki = try TestCertificates.shared()
        let server = try KeyUpdatingServer(identity: pki.server, keyUpdates: 12_000)
        defer { server.stop() }
        let harness = RedisHarness()
        defer { harness.close() }
        var configuration = try Self.configuration(port: server.port)
        configuration.commandTimeout = nil
        configuration.pingInterval = nil
        let redis = try harness.ready(configuration)
        let value = [UInt8](repeating: UInt8(ascii: "v"), count: 1 << 20)
        for index in 0..<16 {
            var set = RESPCommand("SET", "key\(index)")
            set.append(value)
            redis.send(set) { _ in }
        }
        #expect(server.sentEverything.wait(timeout: .seconds(60)), "the server could not send its key updates")
        #expect(eventually { redis.loop.runAndWait { redis.tlsReadStalled } }, "the read never stalled")

        // Stalled: 200 turns of the loop (each a task handed to it, so it polls at least once per turn) wake the
        // connection a few times at most, not once a turn.
        let before = redis.readinessEventCount
        for _ in 0..<200 { redis.loop.runAndWait {} }
        let wakeUps = redis.readinessEventCount - before
        #expect(wakeUps < 20, "the connection was woken \(wakeUps) times in 200 turns for a socket it cannot read")
        #expect(redis.loop.runAndWait { redis.tlsReadStalled }, "still stalled: the server has read nothing")
        #expect(redis.status == .connected)
    }

    @Test func aBadCAFileIsRefusedWhenTheContextIsMade() throws {
        let pki = try TestCertificates.shared()
        let garbage = try pki.write("redis-garbage-ca.pem", contents: "not a certificate\n")
        #expect(throws: TLSError.self) {
            _ = try TLSContext(client: TLSClientConfiguration(trust: .caFile(garbage)))
        }
        #expect(throws: TLSError.self) {
            _ = try TLSContext(client: TLSClientConfiguration(trust: .caFile(pki.directory + "/missing.pem")))
        }
    }
}

/// A TLS 1.3 server for the stalled-read test, on a thread of its own: it accepts one connection (a blocking socket),
/// completes the handshake through a server ``TLSEngine``, answers the first command (`HELLO`) as Redis 7 would,
/// then never reads again and sends `keyUpdates` KeyUpdate messages, each asking the client for one back (with a
/// push after every eighth); it holds the connection open until stopped.
///
/// **Ownership:** The test owns it and calls ``stop()``; the thread holds the sockets and ends once stopped.
/// **Thread safety:** `stopped` is behind a `TestBox`; the engine is confined to the thread.
private final class KeyUpdatingServer: Sendable {
    let port: Int
    /// Fires once every key update has been handed to the kernel.
    let sentEverything = TestSignal()
    private let stopped = TestBox(false)

    init(identity: TestCertificates.Identity, keyUpdates: Int) throws {
        let context = try TLSContext(
            server: TLSServerConfiguration(
                certificateFile: identity.certificateFile,
                privateKeyFile: identity.privateKeyFile
            )
        )
        let (listener, port) = try LoopbackListener.open()
        self.port = port
        let stopped = stopped
        let sentEverything = sentEverything
        Thread.detachNewThread {
            LoopbackListener.acceptUntil(listener, stopped: { stopped.value }) { fd in
                defer { close(fd) }
                guard let engine = try? context.makeServerEngine(),
                    Self.serve(engine, fd, keyUpdates: keyUpdates, stopped: { stopped.value })
                else { return }
                sentEverything.signal()
                // Held open, never read, until the test ends.
                while !stopped.value {
                    var look = pollfd(fd: fd, events: 0, revents: 0)
                    _ = poll(&look, 1, 100)
                }
            }
        }
    }

    func stop() {
        stopped.update { $0 = true }
    }

    /// The handshake, HELLO's answer and the key updates; false when the client went away or the test stopped.
    private static func serve(_ engine: TLSEngine, _ fd: Int32, keyUpdates: Int, stopped: () -> Bool) -> Bool {
        var plaintext: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while !String(decoding: plaintext, as: UTF8.self).contains("HELLO") {
            guard !stopped(), sendOutput(engine, fd) else { return false }
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard count > 0 else { return false }
            engine.feed(buffer[0..<count])
            while case .bytes(let decrypted) = buffer.withUnsafeMutableBytes({ engine.read(into: $0) }),
                decrypted > 0
            {
                plaintext += buffer[0..<decrypted]
            }
        }
        guard case .wrote = engine.write(Array("%1\r\n$5\r\nproto\r\n:3\r\n".utf8)) else { return false }
        // A push between every few key updates: OpenSSL refuses more than 32 KeyUpdates in a row without data.
        let push = Array(">3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$1\r\nx\r\n".utf8)
        for index in 0..<keyUpdates {
            guard !stopped(), engine.requestKeyUpdate() else { return false }
            if index % 8 == 7, case .failed = engine.write(push) { return false }
            guard sendOutput(engine, fd) else { return false }
        }
        return sendOutput(engine, fd)
    }

    /// Sends everything the engine holds (blocking); false when the client went away.
    private static func sendOutput(_ engine: TLSEngine, _ fd: Int32) -> Bool {
        let output = engine.takeOutput()
        var sent = 0
        while sent < output.count {
            let count = output[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { return false }
            sent += count
        }
        return true
    }
}
