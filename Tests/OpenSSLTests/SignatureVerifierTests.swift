import Foundation
import OpenSSL
import Testing

/// The example signatures of RFC 7515 Appendix A (HS256, RS256, ES256, ES512) and RFC 8037 Appendix A.4 (Ed25519),
/// checked through ``LibCrypto`` and ``PublicKey``; each with its forgery (one bit flipped) refused.
@Suite struct SignatureVerifierTests {
    /// The payload of RFC 7515 A.1–A.3, base64url: `{"iss":"joe",\r\n "exp":1300819380,\r\n "http://…":true}`.
    static let rfc7515Payload =
        "eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ"

    /// Bytes of unpadded base64url `text` (test input only: it must be valid).
    static func bytes(_ text: String) -> [UInt8] {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Array(Data(base64Encoded: base64) ?? Data())
    }

    static func flipped(_ bytes: [UInt8], at index: Int = 5) -> [UInt8] {
        var copy = bytes
        copy[index] ^= 0x01
        return copy
    }

    @Test func rfc7515A1HMACSHA256() throws {
        let verifier = try #require(SignatureVerifier())
        let key = Self.bytes("AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow")
        let input = Array("eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9.\(Self.rfc7515Payload)".utf8)
        let mac = Self.bytes("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")
        #expect(mac.count == 32)
        #expect(verifier.hmacMatches(.sha256, key: key, message: input, mac: mac))
        #expect(!verifier.hmacMatches(.sha256, key: key, message: input, mac: Self.flipped(mac)))
        #expect(!verifier.hmacMatches(.sha256, key: key, message: input, mac: Array(mac.prefix(16))))
        #expect(!verifier.hmacMatches(.sha384, key: key, message: input, mac: mac))
        #expect(!verifier.hmacMatches(.sha256, key: Self.flipped(key), message: input, mac: mac))
    }

    /// The prepared key (``HMACKey``: contexts made once, copied per check) gives the one-shot HMAC's answers, for
    /// each digest, on several threads at once.
    @Test func rfc7515A1WithAPreparedKey() async throws {
        let key = Self.bytes("AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow")
        let prepared = try #require(HMACKey(secret: key))
        #expect(prepared.count == key.count)
        let input = Array("eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9.\(Self.rfc7515Payload)".utf8)
        let mac = Self.bytes("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")
        #expect(prepared.matches(.sha256, message: input, mac: mac))
        #expect(!prepared.matches(.sha256, message: input, mac: Self.flipped(mac)))
        #expect(!prepared.matches(.sha256, message: input, mac: Array(mac.prefix(16))))
        #expect(!prepared.matches(.sha384, message: input, mac: mac))
        #expect(!prepared.matches(.sha256, message: Self.flipped(input), mac: mac))
        #expect(try #require(HMACKey(secret: Self.flipped(key))).matches(.sha256, message: input, mac: mac) == false)
        // SHA-384 and SHA-512 agree with the one-shot HMAC (RFC 4231 4.2's key and data).
        let library = try #require(LibCrypto.shared)
        let rfc4231 = try #require(HMACKey(secret: [UInt8](repeating: 0x0B, count: 20)))
        let data = Array("Hi There".utf8)
        for digest in Digest.allCases {
            let expected = try #require(library.hmac(digest, key: [UInt8](repeating: 0x0B, count: 20), message: data))
            #expect(rfc4231.matches(digest, message: data, mac: expected), "\(digest)")
        }
        #expect(
            Self.bytes("sDRMYdjbOFNcqK_OrwvxK4gdwgDJgz2nJuk3bC4yz_c")
                == (try #require(library.hmac(.sha256, key: [UInt8](repeating: 0x0B, count: 20), message: data)))
        )
        // Shared by concurrent checks.
        let results = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<64 {
                group.addTask {
                    index % 2 == 0
                        ? prepared.matches(.sha256, message: input, mac: mac)
                        : !prepared.matches(.sha256, message: input, mac: Self.flipped(mac, at: index % 32))
                }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(results.count == 64 && results.allSatisfy { $0 })
    }

    @Test func rfc7515A2RSASSAPKCS1SHA256() throws {
        let key = try PublicKey(
            rsaModulus: Self.bytes(
                "ofgWCuLjybRlzo0tZWJjNiuSfb4p4fAkd_wWJcyQoTbji9k0l8W26mPddxHmfHQp-Vaw-4qPCJrcS2mJPMEzP1Pt0Bm4d4QlL-yRT-SFd2lZS"
                    + "-pCgNMsD1W_YpRPEwOWvG6b32690r2jZ47soMZo9wGzjb_7OMg0LOL-bSf63kpaSHSXndS5z5rexMdbBYUsLA9e-KXBdQOS-UTo7WTBE"
                    + "Ma2R2CapHg665xsmtdVMTBQY4uDZlxvb3qCo5ZwKh9kG4LT6_I5IhlJH7aGhyxXFvUK-DWNmoudF8NAco9_h9iaGNj8q2ethFkMLs91kz"
                    + "k2PAcDTW9gb54h4FRWyuXpoQ"
            ),
            exponent: Self.bytes("AQAB")
        )
        #expect(key.kind == .rsa(bits: 2048))
        let input = Array("eyJhbGciOiJSUzI1NiJ9.\(Self.rfc7515Payload)".utf8)
        let signature = Self.bytes(
            "cC4hiUPoj9Eetdgtv3hF80EGrhuB__dzERat0XF9g2VtQgr9PJbu3XOiZj5RZmh7AAuHIm4Bh-0Qc_lF5YKt_O8W2Fp5jujGbds9uJdbF9CUAr"
                + "7t1dnZcAcQjbKBYNX4BAynRFdiuB--f_nZLgrnbyTyWzO75vRK5h6xBArLIARNPvkSjtQBMHlb1L07Qe7K0GarZRmB_eSN9383LcOLn6_dO"
                + "--xi12jzDwusC-eOkHWEsqtFZESc6BfI7noOPqvhJ1phCnvWh6IeYI2w9QOYEUipUTI8np6LbgGY9Fs98rqVt5AXLIhWkWywlVmtVrBp0igc"
                + "N_IoypGlUPQGe77Rw"
        )
        #expect(key.verify(.rsaPKCS1(.sha256), signature: signature, message: input))
        #expect(!key.verify(.rsaPKCS1(.sha256), signature: Self.flipped(signature), message: input))
        #expect(!key.verify(.rsaPKCS1(.sha256), signature: signature, message: Self.flipped(input)))
        #expect(!key.verify(.rsaPKCS1(.sha384), signature: signature, message: input))
        #expect(!key.verify(.rsaPSS(.sha256), signature: signature, message: input))
        // Schemes of other key types are refused, not attempted.
        #expect(!key.verify(.ecdsa(.sha256), signature: signature, message: input))
        #expect(!key.verify(.ed25519, signature: signature, message: input))
    }

    static let p256X = "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU"
    static let p256Y = "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"

    @Test func rfc7515A3ECDSAP256SHA256() throws {
        let key = try PublicKey(curve: .p256, x: Self.bytes(Self.p256X), y: Self.bytes(Self.p256Y))
        #expect(key.kind == .ec(.p256))
        let input = Array("eyJhbGciOiJFUzI1NiJ9.\(Self.rfc7515Payload)".utf8)
        let signature = Self.bytes(
            "DtEhU3ljbEg8L38VWAfUAqOyKAM6-Xx-F4GawxaepmXFCgfTjDxw5djxLa8ISlSApmWQxfKTUJqPP3-Kg6NU1Q"
        )
        #expect(signature.count == 64)
        #expect(key.verify(.ecdsa(.sha256), signature: signature, message: input))
        #expect(!key.verify(.ecdsa(.sha256), signature: Self.flipped(signature), message: input))
        #expect(!key.verify(.ecdsa(.sha256), signature: Self.flipped(signature, at: 40), message: input))
        #expect(!key.verify(.ecdsa(.sha256), signature: signature, message: Self.flipped(input)))
        // A DER signature, or r ‖ s of another width, is not JWS's form.
        #expect(!key.verify(.ecdsa(.sha256), signature: Array(signature.dropLast()), message: input))
        #expect(!key.verify(.ecdsa(.sha256), signature: signature + [0], message: input))
        #expect(!key.verify(.ecdsa(.sha384), signature: signature, message: input))
        #expect(!key.verify(.rsaPKCS1(.sha256), signature: signature, message: input))
    }

    @Test func rfc7515A4ECDSAP521SHA512() throws {
        let key = try PublicKey(
            curve: .p521,
            x: Self.bytes("AekpBQ8ST8a8VcfVOTNl353vSrDCLLJXmPk06wTjxrrjcBpXp5EOnYG_NjFZ6OvLFV1jSfS9tsz4qUxcWceqwQGk"),
            y: Self.bytes("ADSmRA43Z1DSNx_RvcLI87cdL07l6jQyyBXMoxVg_l2Th-x3S1WDhjDly79ajL4Kkd0AZMaZmh9ubmf63e3kyMj2")
        )
        let input = Array("eyJhbGciOiJFUzUxMiJ9.UGF5bG9hZA".utf8)
        let signature = Self.bytes(
            "AdwMgeerwtHoh-l192l60hp9wAHZFVJbLfD_UxMi70cwnZOYaRI1bKPWROc-mZZqwqT2SI-KGDKB34XO0aw_7XdtAG8GaSwFKdCAPZgoXD2YBJ"
                + "ZCPEX3xKpRwcdOO8KpEHwJjyqOgzDO7iKvU8vcnwNrmxYbSW9ERBXukOXolLzeO_Jn"
        )
        #expect(signature.count == 132)
        #expect(key.verify(.ecdsa(.sha512), signature: signature, message: input))
        #expect(!key.verify(.ecdsa(.sha512), signature: Self.flipped(signature, at: 70), message: input))
    }

    @Test func rfc8037A4Ed25519() throws {
        let key = try PublicKey(ed25519: Self.bytes("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"))
        #expect(key.kind == .ed25519)
        let input = Array("eyJhbGciOiJFZERTQSJ9.RXhhbXBsZSBvZiBFZDI1NTE5IHNpZ25pbmc".utf8)
        let signature = Self.bytes(
            "hgyY0il_MGCjP0JzlnLWG1PPOt7-09PGcvMg3AIbQR6dWbhijcNR4ki4iylGjg5BhVsPt9g7sVvpAr_MuM0KAg"
        )
        #expect(key.verify(.ed25519, signature: signature, message: input))
        #expect(!key.verify(.ed25519, signature: Self.flipped(signature), message: input))
        #expect(!key.verify(.ed25519, signature: signature, message: Self.flipped(input)))
        #expect(!key.verify(.ecdsa(.sha256), signature: signature, message: input))
    }

    @Test func keysOpenSSLRefusesAreErrors() {
        // The RFC's point with y changed is not on P-256.
        var y = Self.bytes(Self.p256Y)
        y[31] ^= 1
        #expect(throws: PublicKey.KeyError.self) { try PublicKey(curve: .p256, x: Self.bytes(Self.p256X), y: y) }
        #expect(throws: PublicKey.KeyError.self) {
            try PublicKey(curve: .p384, x: Self.bytes(Self.p256X), y: Self.bytes(Self.p256Y))
        }
        #expect(throws: PublicKey.KeyError.self) { try PublicKey(ed25519: [UInt8](repeating: 1, count: 31)) }
        #expect(throws: PublicKey.KeyError.self) { try PublicKey(rsaModulus: [0, 0], exponent: [1, 0, 1]) }
        #expect(throws: PublicKey.KeyError.cryptoUnavailable) {
            try PublicKey(ed25519: [UInt8](repeating: 1, count: 32), library: nil)
        }
    }

    @Test func hmacOfEveryDigestHasItsLength() throws {
        let library = try #require(LibCrypto.shared)
        for digest in Digest.allCases {
            let mac = try #require(library.hmac(digest, key: [], message: Array("spout".utf8)))
            #expect(mac.count == digest.byteCount)
        }
        #expect(library.equalInConstantTime([1, 2, 3], [1, 2, 3]))
        #expect(!library.equalInConstantTime([1, 2, 3], [1, 2, 4]))
        #expect(!library.equalInConstantTime([1, 2, 3], [1, 2]))
    }
}
