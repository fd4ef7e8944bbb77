import Foundation
import Testing

@testable import Spout

/// ``TokenVerifier`` on the RFC 7515 / RFC 8037 example tokens and on every refusal: the algorithm, the key, the
/// signature, the claims and the times; and its cache of verified tokens.
@Suite struct TokenVerifierTests {
    /// The claims of RFC 7515 A.1–A.3: `iss` joe, `exp` 1300819380 (a time before which they verify).
    static let rfcTime = 1_300_819_000.0
    static let rfcPayload =
        "eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ"
    static let a1Token =
        "eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9.\(rfcPayload).dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
    static let a1Key =
        #"{"kty":"oct","k":"AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow"}"#
    static let a2Key = """
        {"kty":"RSA","e":"AQAB","n":"ofgWCuLjybRlzo0tZWJjNiuSfb4p4fAkd_wWJcyQoTbji9k0l8W26mPddxHmfHQp-Vaw-4qPCJrcS2mJPM\
        EzP1Pt0Bm4d4QlL-yRT-SFd2lZS-pCgNMsD1W_YpRPEwOWvG6b32690r2jZ47soMZo9wGzjb_7OMg0LOL-bSf63kpaSHSXndS5z5rexMdbBYUsLA\
        9e-KXBdQOS-UTo7WTBEMa2R2CapHg665xsmtdVMTBQY4uDZlxvb3qCo5ZwKh9kG4LT6_I5IhlJH7aGhyxXFvUK-DWNmoudF8NAco9_h9iaGNj8q2\
        ethFkMLs91kzk2PAcDTW9gb54h4FRWyuXpoQ"}
        """
    static let a2Token = """
        eyJhbGciOiJSUzI1NiJ9.\(rfcPayload).cC4hiUPoj9Eetdgtv3hF80EGrhuB__dzERat0XF9g2VtQgr9PJbu3XOiZj5RZmh7AAuHIm4Bh-0Q\
        c_lF5YKt_O8W2Fp5jujGbds9uJdbF9CUAr7t1dnZcAcQjbKBYNX4BAynRFdiuB--f_nZLgrnbyTyWzO75vRK5h6xBArLIARNPvkSjtQBMHlb1L07\
        Qe7K0GarZRmB_eSN9383LcOLn6_dO--xi12jzDwusC-eOkHWEsqtFZESc6BfI7noOPqvhJ1phCnvWh6IeYI2w9QOYEUipUTI8np6LbgGY9Fs98rq\
        Vt5AXLIhWkWywlVmtVrBp0igcN_IoypGlUPQGe77Rw
        """
    static let a3Key =
        #"{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}"#
    static let a3Token =
        "eyJhbGciOiJFUzI1NiJ9.\(rfcPayload).DtEhU3ljbEg8L38VWAfUAqOyKAM6-Xx-F4GawxaepmXFCgfTjDxw5djxLa8ISlSApmWQxfKTUJqPP3-Kg6NU1Q"
    static let ed25519Key = #"{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}"#
    /// RFC 8037 A.4: the payload is the text "Example of Ed25519 signing", not JSON.
    static let ed25519Token =
        "eyJhbGciOiJFZERTQSJ9.RXhhbXBsZSBvZiBFZDI1NTE5IHNpZ25pbmc.hgyY0il_MGCjP0JzlnLWG1PPOt7-09PGcvMg3AIbQR6dWbhijcNR4ki4iylGjg5BhVsPt9g7sVvpAr_MuM0KAg"

    static func verifier(_ keys: String..., settings: TokenVerifier.Settings = .init()) throws -> TokenVerifier {
        TokenVerifier(keys: try TestTokens.keys(#"{"keys":["# + keys.joined(separator: ",") + "]}"), settings: settings)
    }

    /// Flips one character of the signature part.
    static func tampered(_ token: String) -> String {
        var characters = Array(token)
        let index = characters.count - 3
        characters[index] = characters[index] == "A" ? "B" : "A"
        return String(characters)
    }

    @Test(arguments: [(a1Key, a1Token), (a2Key, a2Token), (a3Key, a3Token)])
    func rfc7515ExamplesVerify(key: String, token: String) throws {
        let verifier = try Self.verifier(key)
        let claims = try verifier.verify(token, now: Self.rfcTime).get()
        #expect(claims.issuer == "joe")
        #expect(claims.expires == 1_300_819_380)
        #expect(verifier.verify(Self.tampered(token), now: Self.rfcTime) == .failure(.badSignature))
        // Their exp is 2011: today they are expired.
        guard case .failure(.expired) = verifier.verify(token, now: TestTokens.now) else {
            Issue.record("an expired token was accepted")
            return
        }
    }

    @Test func rfc8037ExampleSignatureVerifiesButItsPayloadIsNoJWT() throws {
        let verifier = try Self.verifier(Self.ed25519Key)
        // The signature passes (a bad one would be badSignature); the text payload is then refused.
        guard case .failure(.malformed(let detail)) = verifier.verify(Self.ed25519Token, now: Self.rfcTime) else {
            Issue.record("the RFC 8037 token was not refused for its payload")
            return
        }
        #expect(detail.contains("payload"))
        #expect(verifier.verify(Self.tampered(Self.ed25519Token), now: Self.rfcTime) == .failure(.badSignature))
    }

    @Test func leewayForgivesSkewOnExpiry() throws {
        let verifier = try Self.verifier(Self.a1Key, settings: .init(leewaySeconds: 30))
        #expect((try? verifier.verify(Self.a1Token, now: 1_300_819_380 + 30).get()) != nil)
        #expect(
            verifier.verify(Self.a1Token, now: 1_300_819_380 + 31)
                == .failure(.expired("the token expired at 1300819380 (now 1300819411)"))
        )
    }

    @Test func algorithmConfusionIsRefused() throws {
        // An HMAC token whose "secret" is the RSA key's public modulus: the classic confusion attack. The set has only
        // the RSA key; it is never used as an HMAC secret.
        let verifier = try Self.verifier(Self.a2Key)
        let forged = TestTokens.hmac(#"{"sub":"mallory"}"#, secret: Array(Self.a2Key.utf8))
        guard case .failure(.unsupported(let detail)) = verifier.verify(forged, now: TestTokens.now) else {
            Issue.record("an HS256 token was checked against an RSA key")
            return
        }
        #expect(detail.contains("RSA"))
        // The EC key likewise refuses an RS256 token, and an oct key an ES256 one.
        #expect(isUnsupported(try Self.verifier(Self.a3Key).verify(Self.a2Token, now: Self.rfcTime)))
        #expect(isUnsupported(try Self.verifier(Self.a1Key).verify(Self.a3Token, now: Self.rfcTime)))
        // A key bound to HS512 by its alg does not verify an HS256 token, though the secret is right.
        let bound = try TokenVerifier(keys: TestTokens.keys(TestTokens.octSet(kid: nil, alg: "HS512")))
        let token = TestTokens.hmac("{}", secret: TestTokens.secret)
        #expect(isUnsupported(bound.verify(token, now: TestTokens.now)))
    }

    @Test func noneAndUnknownAlgorithmsAndCritAreRefused() throws {
        let verifier = try TokenVerifier(keys: TestTokens.keys(TestTokens.octSet()))
        let payload = Base64URL.encode(Array(#"{"sub":"x"}"#.utf8))
        for header in [#"{"alg":"none"}"#, #"{"alg":"None"}"#, #"{"alg":"HS1"}"#, #"{"alg":"RSA-OAEP"}"#] {
            let token = Base64URL.encode(Array(header.utf8)) + ".\(payload)."
            #expect(isUnsupported(verifier.verify(token, now: TestTokens.now)), "\(header)")
        }
        let critical = TestTokens.hmac(
            "{}",
            secret: TestTokens.secret,
            header: #"{"alg":"HS256","kid":"k1","crit":["exp"],"exp":1}"#
        )
        #expect(isUnsupported(verifier.verify(critical, now: TestTokens.now)))
        // The same token without crit verifies: crit is what refused it.
        let plain = TestTokens.hmac("{}", secret: TestTokens.secret, header: #"{"alg":"HS256","kid":"k1","exp":1}"#)
        #expect((try? verifier.verify(plain, now: TestTokens.now).get()) != nil)
    }

    @Test func shortKeysAreRefused() throws {
        // 31 bytes is short for HS256, 32 is enough; 47 is short for HS384.
        let short = Array(TestTokens.secret.prefix(31))
        let verifier = try TokenVerifier(keys: TestTokens.keys(TestTokens.octSet(short)))
        #expect(isUnsupported(verifier.verify(TestTokens.hmac("{}", secret: short), now: TestTokens.now)))
        let enough = try TokenVerifier(keys: TestTokens.keys(TestTokens.octSet()))
        #expect(
            (try? enough.verify(TestTokens.hmac("{}", secret: TestTokens.secret), now: TestTokens.now).get()) != nil
        )
        let forHS384 = TestTokens.hmac("{}", secret: TestTokens.secret, alg: "HS384")
        #expect(isUnsupported(enough.verify(forHS384, now: TestTokens.now)))
        // RSA under 2048 bits: the RFC's modulus cut to 1024 bits (OpenSSL reads it; Spout refuses it by size).
        let n = Base64URL.encode(
            Base64URL.decode(
                Array(
                    "ofgWCuLjybRlzo0tZWJjNiuSfb4p4fAkd_wWJcyQoTbji9k0l8W26mPddxHmfHQp-Vaw-4qPCJrcS2mJPMEzP1Pt0Bm4d4QlL-yRT-SFd2lZS-pCgNMsD1W_YpRPEwOWvG6b32690r2jZ47soMZo9wGzjb_7OMg0LOL-bSf63kpaSHSXndS5z5rexMdbBYUsLA9e-KXBdQOS-UTo7WTBEMa2R2CapHg665xsmtdVMTBQY4uDZlxvb3qCo5ZwKh9kG4LT6_I5IhlJH7aGhyxXFvUK-DWNmoudF8NAco9_h9iaGNj8q2ethFkMLs91kzk2PAcDTW9gb54h4FRWyuXpoQ"
                        .utf8
                )
            )!.prefix(128)
        )
        let weak = try Self.verifier(#"{"kty":"RSA","e":"AQAB","n":"\#(n)"}"#)
        guard case .failure(.unsupported(let detail)) = weak.verify(Self.a2Token, now: Self.rfcTime) else {
            Issue.record("a 1024-bit RSA key was used")
            return
        }
        #expect(detail.contains("1024"))
    }

    @Test func keysAreFoundByKid() throws {
        let verifier = try TokenVerifier(keys: TestTokens.keys(TestTokens.octSet(kid: "k1")))
        let other = TestTokens.hmac("{}", secret: TestTokens.secret, kid: "k2")
        #expect(
            verifier.verify(other, now: TestTokens.now) == .failure(.unknownKey(#"no configured key has kid "k2""#))
        )
        #expect(
            (try? verifier.verify(TestTokens.hmac("{}", secret: TestTokens.secret, kid: "k1"), now: TestTokens.now)
                .get()) != nil
        )
        // Without kid, every key of the right type is tried.
        #expect(
            (try? verifier.verify(TestTokens.hmac("{}", secret: TestTokens.secret), now: TestTokens.now).get()) != nil
        )
        let wrongSecret = TestTokens.hmac("{}", secret: Array(TestTokens.secret.reversed()), kid: "k1")
        #expect(verifier.verify(wrongSecret, now: TestTokens.now) == .failure(.badSignature))
    }

    @Test func issuerAudienceAndTimesAreChecked() throws {
        let settings = TokenVerifier.Settings(leewaySeconds: 10, issuer: "https://issuer.example", audience: "spout")
        let verifier = try TokenVerifier(keys: TestTokens.keys(TestTokens.octSet()), settings: settings)
        let now = 2_000_000_000.0
        func check(_ claims: String) -> Result<JWTClaims, TokenRefusal> {
            verifier.verify(TestTokens.hmac(claims, secret: TestTokens.secret), now: now)
        }
        let good = #""iss":"https://issuer.example","aud":["other","spout"]"#
        #expect((try? check("{\(good)}").get()) != nil)
        #expect((try? check(#"{"iss":"https://issuer.example","aud":"spout","exp":2000000005}"#).get()) != nil)
        #expect(isNotAccepted(check(#"{"iss":"https://evil.example","aud":"spout"}"#)))
        #expect(isNotAccepted(check(#"{"aud":"spout"}"#)))
        #expect(isNotAccepted(check(#"{"iss":"https://issuer.example","aud":"others"}"#)))
        #expect(isNotAccepted(check(#"{"iss":"https://issuer.example"}"#)))
        #expect(isNotAccepted(check("{\(good),\"nbf\":2000000011}")))
        #expect((try? check("{\(good),\"nbf\":2000000010}").get()) != nil)
        #expect(isNotAccepted(check("{\(good),\"iat\":2000000011}")))
        guard case .failure(.expired) = check("{\(good),\"exp\":1999999989}") else {
            Issue.record("expired token accepted")
            return
        }
        // Claims of the wrong type are refused, not ignored.
        for bad in [
            #"{"exp":"soon"}"#, #"{"sub":1}"#, #"{"aud":[1]}"#, #"{"spout":[]}"#, #"{"spout":{"publish":"a"}}"#,
        ] {
            guard case .failure(.malformed) = verifier.verify(TestTokens.hmac(bad, secret: TestTokens.secret), now: now)
            else {
                Issue.record("\(bad) was accepted")
                continue
            }
        }
    }

    @Test func verifiedTokensAreCachedButTheirTimesAreCheckedEachTime() throws {
        let verifier = try TokenVerifier(keys: TestTokens.keys(TestTokens.octSet()))
        let token = TestTokens.hmac(#"{"sub":"a","exp":2000000000}"#, secret: TestTokens.secret)
        #expect(verifier.cachedTokens == 0)
        #expect((try? verifier.verify(token, now: 1_999_999_000).get())?.subject == "a")
        #expect(verifier.cachedTokens == 1)
        #expect((try? verifier.verify(token, now: 1_999_999_001).get())?.subject == "a")
        #expect(verifier.cachedTokens == 1)
        guard case .failure(.expired) = verifier.verify(token, now: 2_000_000_031) else {
            Issue.record("a cached token outlived its exp")
            return
        }
        // Failures are not cached; new keys forget what the old ones verified.
        _ = verifier.verify(Self.tampered(token), now: 1_999_999_000)
        #expect(verifier.cachedTokens == 1)
        verifier.replaceKeys(JWKSet(keys: []))
        #expect(verifier.cachedTokens == 0)
        guard case .failure(.unknownKey) = verifier.verify(token, now: 1_999_999_000) else {
            Issue.record("a token verified with a withdrawn key was still accepted")
            return
        }
    }

    @Test func theCacheIsBounded() throws {
        let verifier = try TokenVerifier(keys: TestTokens.keys(TestTokens.octSet()), settings: .init(cacheEntries: 3))
        for index in 0..<10 {
            _ = verifier.verify(
                TestTokens.hmac(#"{"sub":"\#(index)"}"#, secret: TestTokens.secret),
                now: TestTokens.now
            )
        }
        #expect(verifier.cachedTokens == 3)
    }

    private func isUnsupported(_ result: Result<JWTClaims, TokenRefusal>) -> Bool {
        if case .failure(.unsupported) = result { true } else { false }
    }

    private func isNotAccepted(_ result: Result<JWTClaims, TokenRefusal>) -> Bool {
        if case .failure(.notAccepted) = result { true } else { false }
    }
}
