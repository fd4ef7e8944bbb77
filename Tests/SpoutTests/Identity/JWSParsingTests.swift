import HTTPServer
import Testing

@testable import Spout

/// Base64url, the JWS compact form and the claims, parsed strictly and within bounds.
@Suite struct JWSParsingTests {
    @Test func base64URLRoundTripsAndIsStrict() {
        for length in 0..<40 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            #expect(Base64URL.decode(Array(Base64URL.encode(bytes).utf8)) == bytes)
        }
        #expect(
            Base64URL.decode(Array("eyJhbGciOiJFUzI1NiJ9".utf8)).map { String(decoding: $0, as: UTF8.self) }
                == #"{"alg":"ES256"}"#
        )
        // Padding, the standard alphabet, whitespace, an impossible length, non-zero unused bits.
        for refused in ["QQ==", "a+b/", "QUJD\n", "QUJDR", "QR", "QUJDRB"] {
            #expect(Base64URL.decode(Array(refused.utf8)) == nil, "\(refused)")
        }
        #expect(Base64URL.decode(Array("QQ".utf8)) == [0x41])
    }

    @Test func compactFormIsThreeParts() throws {
        let header = Base64URL.encode(Array(#"{"alg":"HS256","kid":"a"}"#.utf8))
        let payload = Base64URL.encode(Array("{}".utf8))
        let token = try JWSToken.parse(Array("\(header).\(payload).AAAA".utf8))
        #expect(token.algorithm == .hs256)
        #expect(token.keyID == "a")
        #expect(token.signature == [0, 0, 0])
        #expect(token.signingInput == Array("\(header).\(payload)".utf8))
        for refused in [
            "", "a", "\(header).\(payload)", "\(header).\(payload).AAAA.AAAA", "..",
            "\(header).\(payload).AA=A", "\(header) .\(payload).AAAA",
        ] {
            guard
                case .failure(.malformed) = Result(catching: { () throws(TokenRefusal) in
                    try JWSToken.parse(Array(refused.utf8))
                })
            else {
                Issue.record("\(refused) was not refused as malformed")
                continue
            }
        }
        let long = "\(header).\(payload)." + String(repeating: "A", count: JWSToken.maxBytes)
        #expect(throws: TokenRefusal.self) { try JWSToken.parse(Array(long.utf8)) }
    }

    @Test func headersAreStrictJSON() {
        let payload = Base64URL.encode(Array("{}".utf8))
        for header in [
            #"{"alg":"HS256","alg":"none"}"#,  // duplicate members: refused, never "the last one wins"
            #"["HS256"]"#, #"{"alg":256}"#, #"{"kid":"a"}"#, #"{"alg":"HS256","kid":1}"#, "{", #"{"alg":"HS256"} x"#,
        ] {
            let token = Base64URL.encode(Array(header.utf8)) + ".\(payload).AAAA"
            #expect(throws: TokenRefusal.self, "\(header)") { try JWSToken.parse(Array(token.utf8)) }
        }
    }

    @Test func channelPatterns() throws {
        #expect(ChannelPattern("orders") == .exact("orders"))
        #expect(ChannelPattern("orders.*") == .prefix("orders."))
        #expect(ChannelPattern("*") == .prefix(""))
        for refused in ["", "a*b", "**", "orders/x", "a b", "..", String(repeating: "a", count: 129)] {
            #expect(ChannelPattern(refused) == nil, "\(refused)")
        }
        #expect(ChannelPattern.prefix("user.4").matches("user.42"))
        #expect(!ChannelPattern.prefix("user.42.").matches("user.42"))
        #expect(ChannelPattern.exact("user.42").matches("user.42"))
        #expect(!ChannelPattern.exact("user.42").matches("user.421"))
        #expect(ChannelPattern.prefix("").matches("anything"))
        // An exact pattern is exactly a valid channel name.
        for name in [
            "a", ".", "..", "...", "a.b", "x~y-z_0", "", "a/b", "é", String(repeating: "n", count: 128),
            String(repeating: "n", count: 129),
        ] {
            #expect((ChannelPattern(name) != nil) == ChannelRoutes.isValidName(name), "\(name)")
        }
    }

    @Test func spoutClaimGrantsPerOperation() throws {
        let claims = try JWTClaims.parse(
            Array(#"{"sub":"svc","spout":{"publish":["orders.*"],"subscribe":["user.42","news"],"other":1}}"#.utf8)
        )
        #expect(claims.subject == "svc")
        #expect(claims.rights.publish == [.prefix("orders.")])
        #expect(claims.rights.subscribe == [.exact("user.42"), .exact("news")])
        let identity = ChannelIdentity(
            credential: .jwt(subject: "svc"),
            publish: .patterns(claims.rights.publish),
            subscribe: .patterns(claims.rights.subscribe)
        )
        #expect(identity.mayAccess(channel: "orders.eu", for: .publish))
        #expect(!identity.mayAccess(channel: "orders", for: .publish))
        #expect(!identity.mayAccess(channel: "orders.eu", for: .subscribe))
        #expect(identity.mayAccess(channel: "user.42", for: .subscribe))
        #expect(!identity.mayAccess(channel: "user.43", for: .subscribe))
        #expect(!identity.mayAccessEveryChannel(for: .publish))
        #expect(identity.refusal(channel: "user.43", for: .subscribe).type == ProblemType.channelNotGranted.uri)
        #expect(identity.refusal(channel: "user.43", for: .subscribe).status == 403)
        // No spout claim: nothing.
        let none = try JWTClaims.parse(Array("{}".utf8))
        #expect(none.rights == ChannelRights())
        for refused in [#"{"spout":{"publish":["a*b"]}}"#, #"{"spout":{"subscribe":[1]}}"#, #"{"spout":"*"}"#] {
            #expect(throws: TokenRefusal.self, "\(refused)") { try JWTClaims.parse(Array(refused.utf8)) }
        }
    }

    @Test func cookies() {
        let headers: Headers = ["Cookie": #"a=1; spout_token="abc.def"; b=2"#]
        #expect(RequestCookies.value(named: "spout_token", in: headers) == "abc.def")
        #expect(RequestCookies.value(named: "a", in: headers) == "1")
        #expect(RequestCookies.value(named: "spout", in: headers) == nil)
        #expect(RequestCookies.value(named: "c", in: ["Cookie": "c="]) == nil)
        #expect(RequestCookies.value(named: "c", in: [:]) == nil)
    }
}
