import Foundation
import TestSupport
import Testing

@testable import Spout

/// Signed tokens on a live service over loopback: the `spout` claim's rights, each `401` problem, the cookie and
/// `?token=` for subscriptions, and static tokens beside JWTs.
@Suite(.offPool) struct ChannelTokenHTTPTests {
    static func server(
        _ configure: @escaping (inout SpoutConfiguration) -> Void = { _ in }
    ) throws -> SpoutTestServer {
        let path = try TestTokens.temporaryFile(TestTokens.octSet(kid: "k1"))
        return try SpoutTestServer {
            $0.channels.jwt.jwksFile = path
            configure(&$0)
        }
    }

    static func token(_ claims: String, kid: String = "k1", secret: [UInt8] = TestTokens.secret) -> String {
        TestTokens.hmac(claims, secret: secret, kid: kid)
    }

    static let future = Int(Date().timeIntervalSince1970) + 3600

    static func problemType(_ response: LoopbackClient.Response) -> String? {
        let object = (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any]
        return object?["type"] as? String
    }

    @Test func theSpoutClaimGrantsChannelByChannel() async throws {
        let server = try Self.server()
        let http = try ChannelHTTP(port: server.port)
        defer { http.close() }
        let publisher = Self.token(#"{"sub":"orders-service","exp":\#(Self.future),"spout":{"publish":["orders.*"]}}"#)
        let subscriber = Self.token(#"{"sub":"user-42","exp":\#(Self.future),"spout":{"subscribe":["orders.eu"]}}"#)

        let granted = try http.publish("orders.eu", channelBody([1]), headers: ["Authorization: Bearer \(publisher)"])
        #expect(granted.status == 202)
        let other = try http.publish("billing", channelBody([1]), headers: ["Authorization: Bearer \(publisher)"])
        #expect(other.status == 403)
        #expect(Self.problemType(other) == "/problems/channel-not-granted")
        // A subscribe right does not publish, a publish right does not subscribe.
        let wrongWay = try http.publish("orders.eu", channelBody([1]), headers: ["Authorization: Bearer \(subscriber)"])
        #expect(Self.problemType(wrongWay) == "/problems/channel-not-granted")
        #expect(
            Self.problemType(
                try server.get("/channels/orders.eu/latest", headers: ["Authorization: Bearer \(publisher)"])
            )
                == "/problems/channel-not-granted"
        )
        let latest = try server.get("/channels/orders.eu/latest", headers: ["Authorization: Bearer \(subscriber)"])
        #expect(latest.status == 200)
        #expect(
            try server.get("/channels/orders.us/latest", headers: ["Authorization: Bearer \(subscriber)"]).status == 403
        )
        // With JWT on, a token is needed for both.
        let anonymous = try http.publish("orders.eu", channelBody([1]))
        #expect(anonymous.status == 401)
        #expect(anonymous.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)
        #expect(try server.get("/channels/orders.eu/latest").status == 401)
        // Listing channels needs the right to publish everywhere.
        #expect(
            try http.send("GET", "/channels", headers: ["Authorization: Bearer \(publisher)"], contentType: nil).status
                == 403
        )
        let admin = Self.token(#"{"exp":\#(Self.future),"spout":{"publish":["*"]}}"#)
        #expect(
            try http.send("GET", "/channels", headers: ["Authorization: Bearer \(admin)"], contentType: nil).status
                == 200
        )
        await server.stop()
    }

    /// `GET /subscribe` asks the token for every channel and pattern it names, and for every channel a granted
    /// pattern picks up later (by name).
    @Test func theMultiChannelRouteAsksTheTokenForEachChannelAndPattern() async throws {
        let server = try Self.server()
        let http = try ChannelHTTP(port: server.port)
        defer { http.close() }
        let reader = Self.token(#"{"sub":"user-42","exp":\#(Self.future),"spout":{"subscribe":["user.42","news.*"]}}"#)
        let header = ["Authorization: Bearer \(reader)"]
        let granted = try StreamClient.multi(["user.42", "news.*", "news.eu"], port: server.port, headers: header)
        #expect(granted.status == 200)
        let byQuery = try StreamClient.multi(["user.42"], port: server.port, query: "&token=\(reader)")
        #expect(byQuery.status == 200)
        byQuery.close()
        for refused in ["user.43", "user.*", "user.4*", "new*"] {
            let response = try server.get("/subscribe?channel=user.42&channel=\(refused)", headers: header)
            #expect(response.status == 403, "\(refused)")
            #expect(Self.problemType(response) == "/problems/channel-not-granted", "\(refused)")
        }
        #expect(try server.get("/subscribe?channel=user.42").status == 401)
        #expect(try server.get("/subscribe?channel=user.42", headers: ["Authorization: Bearer nope"]).status == 401)

        let publisher = Self.token(#"{"exp":\#(Self.future),"spout":{"publish":["*"]}}"#)
        let publish = ["Authorization: Bearer \(publisher)"]
        #expect(try http.publish("news.eu", channelBody([1]), headers: publish).status == 202)
        #expect(try http.publish("user.42", channelBody([2]), headers: publish).status == 202)
        let frames = try granted.multiFrames(2)
        #expect(Set(frames.compactMap(\.channel)) == ["news.eu", "user.42"])
        granted.close()
        await server.stop()
    }

    @Test func eachRefusedTokenHasItsProblem() async throws {
        let server = try Self.server()
        let http = try ChannelHTTP(port: server.port)
        defer { http.close() }
        let rights = #""spout":{"publish":["*"]}"#
        let cases: [(token: String, type: String)] = [
            (Self.token(#"{"exp":1000,\#(rights)}"#), "/problems/token-expired"),
            (
                Self.token(#"{\#(rights)}"#, secret: Array(TestTokens.secret.reversed())),
                "/problems/token-signature-invalid"
            ),
            (Self.token(#"{\#(rights)}"#, kid: "k9"), "/problems/token-key-unknown"),
            (TestTokens.hmac("{}", secret: [], header: #"{"alg":"none"}"#), "/problems/token-invalid"),
            ("not.a.jwt", "/problems/token-invalid"),
        ]
        for (token, type) in cases {
            let response = try http.publish("any", channelBody([1]), headers: ["Authorization: Bearer \(token)"])
            #expect(response.status == 401, "\(type)")
            #expect(Self.problemType(response) == type)
            #expect(response.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)
            // Each type is documented at its URI.
            #expect(try server.get(type).status == 200)
        }
        await server.stop()
    }

    @Test func aSubscriptionTakesItsTokenFromTheCookieOrTheQuery() async throws {
        let server = try Self.server { $0.channels.jwt.cookieName = "spout_token" }
        let http = try ChannelHTTP(port: server.port)
        defer { http.close() }
        let reader = Self.token(#"{"exp":\#(Self.future),"spout":{"subscribe":["news"]}}"#)
        let writer = Self.token(#"{"exp":\#(Self.future),"spout":{"publish":["news"]}}"#)

        let byCookie = try StreamClient.channel(
            "news",
            port: server.port,
            headers: ["Cookie: theme=dark; spout_token=\(reader)"]
        )
        defer { byCookie.close() }
        let byQuery = try StreamClient.channel("news", port: server.port, query: "?token=\(reader)")
        defer { byQuery.close() }
        let admin = ["Authorization: Bearer \(Self.token(#"{"spout":{"publish":["*"]}}"#))"]
        #expect(eventually { (try? server.channelList(headers: admin))?["news"]?.subscribers == 2 })
        _ = try http.publishIDs("news", channelBody([7]), headers: ["Authorization: Bearer \(writer)"])
        #expect(numbers(try byCookie.frames(1)) == [7])
        #expect(numbers(try byQuery.frames(1)) == [7])
        // The cookie does not publish (a page's requests carry cookies it did not choose to send).
        let cookiePublish = try http.publish("news", channelBody([8]), headers: ["Cookie: spout_token=\(writer)"])
        #expect(cookiePublish.status == 401)
        // A cookie with a token for another channel is refused.
        let elsewhere = try server.get("/channels/sports/latest", headers: ["Cookie: spout_token=\(reader)"])
        #expect(elsewhere.status == 403)
        // The query token is not in the log.
        #expect(try server.get("/channels/news/latest?token=\(reader)").status == 200)
        #expect(eventually { server.log.lines.contains { $0.contains("token=REDACTED") } })
        #expect(!server.log.lines.contains { $0.contains(reader) })
        await server.stop()
    }

    @Test func withATokenCookieListedOriginsMaySendCredentials() async throws {
        let server = try Self.server {
            $0.channels.jwt.cookieName = "spout_token"
            $0.cors.allowedOrigins = ["https://app.example"]
        }
        let reader = Self.token(#"{"spout":{"subscribe":["news"]}}"#)
        let cookie = "Cookie: spout_token=\(reader)"
        let listed = try server.get("/channels/news/latest", headers: ["Origin: https://app.example", cookie])
        #expect(listed.status == 404)  // allowed, and nothing published yet
        #expect(listed.header("Access-Control-Allow-Origin") == "https://app.example")
        #expect(listed.header("Access-Control-Allow-Credentials") == "true")
        let other = try server.get("/channels/news/latest", headers: ["Origin: https://evil.example", cookie])
        #expect(other.header("Access-Control-Allow-Origin") == nil)
        #expect(other.header("Access-Control-Allow-Credentials") == nil)
        // The stream itself, as EventSource with withCredentials opens it.
        let stream = try StreamClient.channel(
            "news",
            port: server.port,
            headers: ["Origin: https://app.example", cookie]
        )
        #expect(stream.status == 200)
        #expect(stream.header("Access-Control-Allow-Credentials") == "true")
        stream.close()
        await server.stop()

        // Without a token cookie, no credentials; with *, never.
        let plain = try SpoutTestServer { $0.cors.allowedOrigins = ["https://app.example"] }
        let noCookie = try plain.get("/health", headers: ["Origin: https://app.example"])
        #expect(noCookie.header("Access-Control-Allow-Origin") == "https://app.example")
        #expect(noCookie.header("Access-Control-Allow-Credentials") == nil)
        await plain.stop()
        let wildcard = try Self.server {
            $0.channels.jwt.cookieName = "spout_token"
            $0.cors.allowedOrigins = ["*"]
        }
        let any = try wildcard.get("/health", headers: ["Origin: https://app.example"])
        #expect(any.header("Access-Control-Allow-Origin") == "*")
        #expect(any.header("Access-Control-Allow-Credentials") == nil)
        await wildcard.stop()
    }

    @Test func staticTokensKeepWorkingBesideJWT() async throws {
        let server = try Self.server {
            $0.channels.publishTokens = ["static-pub"]
            $0.channels.subscribeTokens = ["static-sub"]
        }
        let http = try ChannelHTTP(port: server.port)
        defer { http.close() }
        #expect(try http.publish("x", channelBody([1]), headers: ["Authorization: Bearer static-pub"]).status == 202)
        #expect(try server.get("/channels/x/latest", headers: ["Authorization: Bearer static-sub"]).status == 200)
        #expect(try server.get("/channels/x/latest?token=static-sub").status == 200)
        #expect(try http.publish("x", channelBody([1]), headers: ["Authorization: Bearer static-sub"]).status == 403)
        let jwt = Self.token(#"{"spout":{"publish":["x"]}}"#)
        #expect(try http.publish("x", channelBody([2]), headers: ["Authorization: Bearer \(jwt)"]).status == 202)
        await server.stop()
    }

    @Test func anUnreadableKeySetRefusesTokensAndSaysWhy() async throws {
        let server = try SpoutTestServer { $0.channels.jwt.jwksFile = "/nonexistent/jwks.json" }
        let http = try ChannelHTTP(port: server.port)
        defer { http.close() }
        let response = try http.publish(
            "x",
            channelBody([1]),
            headers: ["Authorization: Bearer \(Self.token(#"{"spout":{"publish":["x"]}}"#))"]
        )
        #expect(Self.problemType(response) == "/problems/token-key-unknown")
        #expect(response.text.contains("/nonexistent/jwks.json"))
        await server.stop()
    }
}
