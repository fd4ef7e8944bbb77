import Foundation
import HTTPServer
import TestSupport
import Testing

@testable import Spout

/// `trustedProxies`: which peers may name the client, which hop is the client, and what the loopback rule does
/// behind a proxy.
@Suite struct TrustedProxiesTests {
    static let proxies = TrustedProxies(["10.0.0.0/8", "127.0.0.1", "2001:db8::/32"])!

    @Test func networksParseAndContain() throws {
        #expect(Self.proxies.trusts("10.1.2.3"))
        #expect(Self.proxies.trusts("127.0.0.1"))
        #expect(Self.proxies.trusts("::ffff:10.9.9.9"), "an IPv4-mapped address is its IPv4 address")
        #expect(Self.proxies.trusts("2001:db8:1::5"))
        for outside in ["11.0.0.1", "127.0.0.2", "2001:db9::1", "::1", "", "unknown", "10.0.0", "10.0.0.1/8"] {
            #expect(!Self.proxies.trusts(outside), "\(outside)")
        }
        #expect(TrustedProxies.Network("192.168.1.0/23")?.contains([192, 168, 0, 77]) == true)
        #expect(TrustedProxies.Network("192.168.1.0/24")?.contains([192, 168, 0, 77]) == false)
        #expect(TrustedProxies.Network("0.0.0.0/0")?.contains([1, 2, 3, 4]) == true)
        for refused in ["10.0.0.0/33", "::/129", "10.0.0.0/-1", "10.0.0.0/", "host.example", "10.0.0.0/8/8", ""] {
            #expect(TrustedProxies.Network(refused) == nil, "\(refused)")
        }
    }

    @Test func theClientIsTheRightmostUntrustedHop() {
        let peer = "10.0.0.2"
        func client(_ headers: Headers, from peer: String = peer) -> (String, String?) {
            let found = Self.proxies.client(peer: peer, headers: headers)
            return (found.client, found.proxy)
        }
        // The client may write anything left of what the proxies appended.
        #expect(client(["X-Forwarded-For": "127.0.0.1, 203.0.113.7, 10.0.0.9"]) == ("203.0.113.7", peer))
        #expect(client(["X-Forwarded-For": "203.0.113.7"]) == ("203.0.113.7", peer))
        // All trusted: the leftmost.
        #expect(client(["X-Forwarded-For": "10.0.0.5, 10.0.0.6"]) == ("10.0.0.5", peer))
        // Nothing forwarded: the proxy itself.
        #expect(client([:]) == (peer, peer))
        // Forwarded (RFC 7239) wins, with its quotes, brackets and ports.
        let forwarded: Headers = [
            "Forwarded": #"for=198.51.100.1;proto=https, For="[2001:db8:cafe::17]:4711", for="192.0.2.60:8080""#,
            "X-Forwarded-For": "203.0.113.99",
        ]
        #expect(client(forwarded) == ("192.0.2.60", peer))
        #expect(client(["Forwarded": #"for=198.51.100.1, for="[2001:db8::9]""#]) == ("198.51.100.1", peer))
        #expect(client(["Forwarded": "for=unknown"]) == ("unknown", peer))
        // A peer that is not trusted is the client, whatever it says.
        #expect(client(["X-Forwarded-For": "127.0.0.1"], from: "203.0.113.5") == ("203.0.113.5", nil))
        #expect(client(["Forwarded": "for=127.0.0.1"], from: "203.0.113.5") == ("203.0.113.5", nil))
    }

    @Test func behindAProxyTheLoopbackRuleNoLongerPublishes() throws {
        let access = ChannelAccess(configuration: SpoutConfiguration.Channels(), trustedProxies: ["127.0.0.1"])
        let refusal = try #require(access.checkPublish(authorization: nil, remoteAddress: "127.0.0.1"))
        #expect(refusal.status == 403)
        #expect(refusal.detail.contains("trustedProxies"))
        // Without trusted proxies the same request publishes.
        let direct = ChannelAccess(configuration: SpoutConfiguration.Channels())
        #expect(direct.checkPublish(authorization: nil, remoteAddress: "127.0.0.1") == nil)
        // With a publish token configured, the token decides as before.
        var configuration = SpoutConfiguration.Channels()
        configuration.publishTokens = ["p"]
        let tokens = ChannelAccess(configuration: configuration, trustedProxies: ["127.0.0.1"])
        #expect(tokens.checkPublish(authorization: "Bearer p", remoteAddress: "203.0.113.5") == nil)
    }

    @Test func theConfigurationRefusesWhatIsNoNetwork() throws {
        let loaded = try SpoutConfiguration.load(
            arguments: [],
            environment: ["SPOUT_TRUSTED_PROXIES": "10.0.0.0/8, ::1"]
        )
        guard case .run(let configuration) = loaded else {
            Issue.record("not a run")
            return
        }
        #expect(configuration.trustedProxies == ["10.0.0.0/8", "::1"])
        #expect(throws: ConfigError.self) {
            try SpoutConfiguration.load(
                arguments: [],
                environment: ["SPOUT_TRUSTED_PROXIES": "10.0.0.0/8, proxy.local"]
            )
        }
        var fromFile = SpoutConfiguration()
        #expect(throws: ConfigError.self) {
            try fromFile.apply(json: Data(#"{"trustedProxies": ["10.0.0.0/40"]}"#.utf8), source: "test")
        }
    }
}

/// The same over loopback: behind trusted proxies the loopback rule stops, and a token decides.
@Suite(.offPool) struct TrustedProxiesHTTPTests {
    @Test func withTrustedProxiesAndNoTokenNobodyPublishes() async throws {
        let proxied = try SpoutTestServer { $0.trustedProxies = ["127.0.0.1"] }
        let http = try ChannelHTTP(port: proxied.port)
        let refused = try http.publish("p", channelBody([1]), headers: ["X-Forwarded-For: 127.0.0.1"])
        #expect(refused.status == 403)
        #expect(refused.text.contains("trustedProxies"))
        http.close()
        await proxied.stop()

        // No proxies configured: a loopback peer publishes, whatever it claims to forward.
        let plain = try SpoutTestServer()
        let direct = try ChannelHTTP(port: plain.port)
        #expect(try direct.publish("p", channelBody([1]), headers: ["X-Forwarded-For: 203.0.113.5"]).status == 202)
        direct.close()
        await plain.stop()
    }

    @Test func behindATrustedProxyAJWTDecides() async throws {
        let path = try TestTokens.temporaryFile(TestTokens.octSet(kid: "k1"))
        let server = try SpoutTestServer {
            $0.trustedProxies = ["127.0.0.0/8"]
            $0.channels.jwt.jwksFile = path
        }
        let http = try ChannelHTTP(port: server.port)
        defer { http.close() }
        let token = TestTokens.hmac(#"{"spout":{"publish":["p"]}}"#, secret: TestTokens.secret, kid: "k1")
        let response = try http.publish(
            "p",
            channelBody([1]),
            headers: ["Authorization: Bearer \(token)", "X-Forwarded-For: 203.0.113.5"]
        )
        #expect(response.status == 202)
        await server.stop()
    }
}
