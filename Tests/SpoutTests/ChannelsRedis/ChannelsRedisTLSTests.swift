import Foundation
import OpenSSL
import TestSupport
import Testing

@testable import Spout

/// Channels across two replicas through a redis-server that speaks TLS only to clients with a certificate
/// (`rediss://`, `channels.redisTLSCAFile`, `channels.redisTLSCertificateFile`), and the start-up errors of the
/// `rediss://` settings. Certificates are made by the tests with the `openssl` tool.
@Suite(.offPool, .enabled(if: RedisServer.tlsTestsEnabled), .timeLimit(.minutes(3 * TestTiming.scale)))
struct ChannelsRedisTLSTests {
    /// The `channels` settings of a replica that reaches `port` over TLS with the test CA and client certificate.
    private static func tlsChannels(port: Int) throws -> [String: Any] {
        let pki = try TestCertificates.shared()
        return [
            "redisURL": "rediss://localhost:\(port)",
            "redisTLSCAFile": pki.rootCertificateFile,
            "redisTLSCertificateFile": pki.client.certificateFile,
            "redisTLSPrivateKeyFile": pki.client.privateKeyFile,
        ]
    }

    @Test func publishedOnOneReplicaOverRedissASubscriberOnTheOtherGetsIt() async throws {
        let pki = try TestCertificates.shared()
        let redis = try RedisServer.startTLS(
            certificateFile: pki.server.certificateFile,
            privateKeyFile: pki.server.privateKeyFile,
            caFile: pki.rootCertificateFile,
            authClients: true
        )
        defer { redis.stop() }
        let tlsPort = try #require(redis.tlsPort)
        let a = try await SpoutTestServer.replica(redisPort: redis.port, channels: try Self.tlsChannels(port: tlsPort))
        let b = try await SpoutTestServer.replica(redisPort: redis.port, channels: try Self.tlsChannels(port: tlsPort))

        let publisher = try ChannelHTTP(port: a.port)
        defer { publisher.close() }
        let first = try publisher.publishIDs("secure", channelBody([0]))
        let onB = try StreamClient.channel("secure", port: b.port, headers: ["Last-Event-ID: \(first[0])"])
        defer { onB.close() }
        #expect(onB.status == 200)
        var ids = first
        for number in 1...10 { ids += try publisher.publishIDs("secure", channelBody([number])) }
        let frames = try onB.frames(through: ids.last!)
        #expect(frames.map(\.id) == Array(ids.dropFirst()), "every later event once, in order, across replicas")
        #expect(numbers(frames) == Array(1...10))

        // Both replicas' links (their only way to Redis is its TLS port) are up.
        #expect(a.redisIsUp(true) && b.redisIsUp(true) && b.redisIsUp(true, role: "subscribe"))

        // The TLS handshakes with Redis are counted, per role, and every failure reason is there at 0.
        for role in ["publish", "subscribe"] {
            let handshakes = a.labelledSamples("spout_redis_tls_handshakes_total", #"role="\#(role)""#)
            #expect(handshakes.count == 2, "one series per protocol version: \(handshakes)")
            #expect(handshakes.reduce(0, +) >= 1)
            let failures = a.labelledSamples("spout_redis_tls_handshake_failures_total", #"role="\#(role)""#)
            #expect(failures.count == RedisMetrics.tlsFailureReasons.count)
            #expect(failures.allSatisfy { $0 == 0 })
        }
        #expect(a.labelledCounter("spout_redis_tls_handshake_failures_total", #"reason="untrusted_certificate""#) == 0)
        await a.stop()
        await b.stop()
    }

    @Test func aBadCAFileRefusesTheStartNamingIt() throws {
        let pki = try TestCertificates.shared()
        let garbage = try pki.write("redis-channels-garbage-ca.pem", contents: "garbage")
        var configuration = SpoutConfiguration()
        configuration.port = 0
        configuration.channels.redisURL = "rediss://localhost:6380"
        configuration.channels.redisTLSCAFile = garbage
        #expect {
            try SpoutService.start(configuration: configuration)
        } throws: { error in
            guard case .caFile(let path, _) = error as? TLSError else { return false }
            return path == garbage && "\(error)".contains("tls ca file")
        }
    }

    @Test func aClientCertificateWithoutItsKeyRefusesTheStart() throws {
        let pki = try TestCertificates.shared()
        var configuration = SpoutConfiguration()
        configuration.port = 0
        configuration.channels.redisURL = "rediss://localhost:6380"
        configuration.channels.redisTLSCertificateFile = pki.client.certificateFile
        configuration.channels.redisTLSPrivateKeyFile = pki.server.privateKeyFile
        #expect {
            try SpoutService.start(configuration: configuration)
        } throws: { error in
            guard case .privateKeyFile(let path, _) = error as? TLSError else { return false }
            return path == pki.server.privateKeyFile
        }
    }

    @Test func theRedissKeysAreReadFromTheEnvironmentAndCheckedTogether() throws {
        guard
            case .run(let configuration) = try SpoutConfiguration.load(
                arguments: [],
                environment: [
                    "SPOUT_REDIS_URL": "rediss://redis.example.com:6380",
                    "SPOUT_REDIS_TLS_CA_FILE": "/etc/spout/redis-ca.pem",
                    "SPOUT_REDIS_TLS_CERTIFICATE_FILE": "/etc/spout/redis.crt",
                    "SPOUT_REDIS_TLS_PRIVATE_KEY_FILE": "/etc/spout/redis.key",
                ]
            )
        else {
            Issue.record("not a run")
            return
        }
        #expect(configuration.channels.redisTLSCAFile == "/etc/spout/redis-ca.pem")
        #expect(configuration.channels.redisTLSCertificateFile == "/etc/spout/redis.crt")
        #expect(configuration.channels.redisTLSPrivateKeyFile == "/etc/spout/redis.key")

        for (environment, key) in [
            (
                ["SPOUT_REDIS_URL": "rediss://redis", "SPOUT_REDIS_TLS_CERTIFICATE_FILE": "/c.pem"],
                "channels.redisTLSPrivateKeyFile"
            ),
            (["SPOUT_REDIS_URL": "redis://redis", "SPOUT_REDIS_TLS_CA_FILE": "/ca.pem"], "channels.redisTLSCAFile"),
            (["SPOUT_REDIS_TLS_CA_FILE": "/ca.pem"], "channels.redisTLSCAFile"),
        ] {
            #expect {
                try SpoutConfiguration.load(arguments: [], environment: environment)
            } throws: { error in
                "\(error)".contains(key)
            }
        }
    }
}
