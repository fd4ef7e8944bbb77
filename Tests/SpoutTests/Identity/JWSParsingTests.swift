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
            #"{"alg":"HS256","\u0061lg":"none"}"#,  // however the name is spelled
            #"{"alg":"HS256","x":{"k":1,"k":2}}"#,  // in members Spout does not read, too
            #"{"alg":"HS256","c\u0072it":["x"]}"#,
            #"["HS256"]"#, #"{"alg":256}"#, #"{"kid":"a"}"#, #"{"alg":"HS256","kid":1}"#, "{", #"{"alg":"HS256"} x"#,
        ] {
            let token = Base64URL.encode(Array(header.utf8)) + ".\(payload).AAAA"
            #expect(throws: TokenRefusal.self, "\(header)") { try JWSToken.parse(Array(token.utf8)) }
        }
    }

    /// What ``StrictJSONReader`` makes of `text` read in place, as headers and claims are, said as ``ConfigJSON``
    /// would say it: `syntax`, `notObject` or `object`.
    static func fastVerdict(_ text: String) -> String {
        Array(text.utf8).withUnsafeBufferPointer { bytes in
            var reader = StrictJSONReader(bytes)
            do throws(TokenRefusal) {
                try reader.document(notObject: .unsupported("not"), syntax: { .malformed($0.reason) }) {
                    (reader: inout StrictJSONReader, _: StrictJSONReader.Name) throws(TokenRefusal) in
                    do throws(StrictJSONReader.SyntaxError) { try reader.skip(depth: 1) } catch {
                        throw .malformed(error.reason)
                    }
                }
                return "object"
            } catch {
                if case .unsupported = error { return "notObject" }
                return "syntax"
            }
        }
    }

    static func strictVerdict(_ text: String) -> String {
        guard let value = try? ConfigJSON.parse(Array(text.utf8)) else { return "syntax" }
        if case .object = value { return "object" }
        return "notObject"
    }

    /// The in-place reader accepts exactly what the strict tree parser accepts: duplicate members (however their
    /// names are escaped, at any depth), trailing commas, leading zeros, bad escapes and UTF-8, control characters
    /// and nesting past 64 levels are refused alike.
    @Test func theInPlaceReaderIsAsStrictAsConfigJSON() {
        let deep = String(repeating: "[", count: 70) + String(repeating: "]", count: 70)
        let documents = [
            "{}", " { } ", "\u{FEFF}{}", #"{"a":1}"#, #"{"a":1,"a":2}"#, #"{"a":1,"\u0061":2}"#,
            #"{"x":{"b":1,"b":2}}"#, #"{"x":[{"b":1,"b":2}]}"#, #"{"x":{"b":1},"y":{"b":1}}"#, #"{"a":1,}"#,
            #"{"a":[1,]}"#, #"{"a":[,1]}"#, #"{"a":01}"#, #"{"a":-0}"#, #"{"a":1.}"#, #"{"a":1e}"#, #"{"a":1.5e+3}"#,
            #"{"a":-}"#, #"{"a":"\q"}"#, #"{"a":"\ud800"}"#, #"{"a":"\ud83d\ude00"}"#, #"{"a":"\udc00"}"#,
            #"{"a":"\u12"}"#, "{\"a\":\"\u{1}\"}", #"{"a":"é"}"#, #"{"a":tru}"#, #"{"a":true,"b":false,"c":null}"#,
            #"{"a" 1}"#, #"{a:1}"#, #"{"a":1} x"#, #"{"a":1}{}"#, "[]", "3", #""s""#, "null", "", "{", #"{"a":"#,
            #"{"a":"x}"#, "{\"" + deep + "\":1}", #"{"a":"# + deep + "}", #"{"a":[[["x"]]],"b":{"c":{"d":[]}}}"#,
            #"{"":1,"":2}"#, #"{"a\"b":1,"a\u0022b":2}"#,
        ]
        for document in documents {
            #expect(Self.fastVerdict(document) == Self.strictVerdict(document), "\(document)")
        }
        // Invalid UTF-8 inside a string, and a lone continuation byte.
        for bytes in [
            [0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xC3, 0x22, 0x7D], [0x7B, 0x22, 0x80, 0x22, 0x3A, 0x31, 0x7D],
        ]
            as [[UInt8]]
        {
            let text = String(decoding: bytes, as: UTF8.self)
            let fast = bytes.withUnsafeBufferPointer { buffer -> Bool in
                var reader = StrictJSONReader(buffer)
                return (try? reader.skip(depth: 0)) != nil
            }
            #expect(!fast, "\(text)")
            #expect((try? ConfigJSON.parse(bytes)) == nil)
        }
    }

    /// Claims read in place: escaped names and values decode, numbers keep fractions, and every claim of the wrong
    /// type is refused rather than ignored.
    @Test func claimsAreReadInPlace() throws {
        let claims = try JWTClaims.parse(
            Array(
                #"{"s\u0075b":"caf\u00e9 \"x\"","iss":"i","aud":["a","b"],"exp":1799214319.5,"nbf":-3,"iat":0,"#
                    .utf8
            ) + Array(#""other":{"deep":[1,{"x":null}]},"spout":{"publish":["a.*"],"extra":[{}]}}"#.utf8)
        )
        #expect(claims.subject == "café \"x\"")
        #expect(claims.issuer == "i")
        #expect(claims.audience == ["a", "b"])
        #expect(claims.expires == 1_799_214_319.5)
        #expect(claims.notBefore == -3)
        #expect(claims.issuedAt == 0)
        #expect(claims.rights.publish == [.prefix("a.")])
        #expect(
            try JWTClaims.parse(Array(#"{"aud":"x","exp":12345678901234567890}"#.utf8)).expires
                == 1.234_567_890_123_456_789_0e19
        )
        for refused in [
            #"{"sub":1}"#, #"{"iss":null}"#, #"{"aud":[1]}"#, #"{"aud":{}}"#, #"{"exp":"1"}"#, #"{"nbf":true}"#,
            #"{"iat":1e999}"#, #"{"spout":{"publish":"a"}}"#, #"{"spout":[]}"#, #"{"sub":"a","sub":"a"}"#,
            #"{"spout":{"publish":[],"publish":[]}}"#, #"{"other":{"x":1,"x":1}}"#, "[]", "{",
            #"{"spout":{"subscribe":[\#((0...ChannelRights.maxPatterns).map { "\"c\($0)\"" }.joined(separator: ","))]}}"#,
        ] {
            #expect(throws: TokenRefusal.self, "\(refused)") { try JWTClaims.parse(Array(refused.utf8)) }
        }
    }

    @Test func channelPatterns() throws {
        #expect(ChannelPattern("orders") == .exact("orders"))
        #expect(ChannelPattern("orders.*") == .prefix("orders."))
        #expect(ChannelPattern("*") == .prefix(""))
        for refused in ["", "a*b", "**", "orders/x", "a b", "..", String(repeating: "a", count: 129), "ab/", "ab\u{0}"]
        {
            #expect(ChannelPattern(refused) == nil, "\(refused)")
        }
        #expect(ChannelPattern.prefix("user.4").matches("user.42"))
        #expect(!ChannelPattern.prefix("user.42.").matches("user.42"))
        #expect(ChannelPattern.exact("user.42").matches("user.42"))
        #expect(!ChannelPattern.exact("user.42").matches("user.421"))
        #expect(ChannelPattern.prefix("").matches("anything"))
        // An exact pattern is exactly a valid channel name.
        for name in [
            "a", ".", "..", "...", "a.b", "x~y-z_0", "", "a/b", "ab/", "é", String(repeating: "n", count: 128),
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
