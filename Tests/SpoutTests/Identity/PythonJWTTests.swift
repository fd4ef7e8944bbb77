import Foundation
import TestSupport
import Testing

@testable import Spout

/// Tokens made by an independent implementation, PyJWT with keys from `cryptography`, for every algorithm Spout
/// verifies; and the refusals that only real keys can show (a 1024-bit RSA key, HMAC with a public key as secret).
@Suite(.enabled(if: PythonJWT.testsEnabled)) struct PythonJWTTests {
    @Test func everyAlgorithmOfPyJWTVerifies() throws {
        let made = try PythonJWT.make()
        let keys = try JWKSet(json: Array(made.jwks.utf8))
        #expect(keys.keys.count == PythonJWT.algorithms.count)
        let verifier = TokenVerifier(keys: keys)
        let now = Date().timeIntervalSince1970
        for algorithm in PythonJWT.algorithms {
            let token = try #require(made.tokens[algorithm], "\(algorithm)")
            let claims = try verifier.verify(token, now: now).get()
            #expect(claims.subject == "subject-\(algorithm)")
            #expect(claims.rights.publish == [.prefix("orders.")])
            #expect(claims.rights.subscribe == [.exact("user.42")])
            // One character of the signature changed: refused.
            var characters = Array(token)
            characters[characters.count - 4] = characters[characters.count - 4] == "A" ? "B" : "A"
            #expect(verifier.verify(String(characters), now: now) == .failure(.badSignature), "\(algorithm)")
        }
        // PyJWT's expired token is refused as expired.
        guard case .failure(.expired) = verifier.verify(made.expired, now: now) else {
            Issue.record("PyJWT's expired token was accepted")
            return
        }
    }

    @Test func confusionAndWeakKeysMadeByPythonAreRefused() throws {
        let made = try PythonJWT.make()
        let now = Date().timeIntervalSince1970
        let keys = TokenVerifier(keys: try JWKSet(json: Array(made.jwks.utf8)))
        // HS256 with the RS256 key's PEM as the secret, signed with Python's hmac.
        guard case .failure(.unsupported) = keys.verify(made.confused, now: now) else {
            Issue.record("an HS256 token was verified against an RSA public key")
            return
        }
        let weak = TokenVerifier(keys: try JWKSet(json: Array(made.weakJWKS.utf8)))
        guard case .failure(.unsupported(let detail)) = weak.verify(made.weakToken, now: now) else {
            Issue.record("a token of a 1024-bit RSA key was accepted")
            return
        }
        #expect(detail.contains("1024"))
    }
}

/// PyJWT and `cryptography`, run by the Python named by `SPOUT_PYTHON` (default `python3`).
///
/// Skipped when that Python lacks them (so `swift test` needs only the toolchain), unless
/// `SPOUT_REQUIRE_PYTHON_JWT` is set: then missing modules fail the tests (CI sets it, `.ci/run`).
enum PythonJWT {
    static let algorithms = [
        "HS256", "HS384", "HS512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512",
        "EdDSA",
    ]

    static let script = #"""
        import hashlib, hmac, json, sys, time, base64
        import jwt
        from jwt.algorithms import RSAAlgorithm, ECAlgorithm, OKPAlgorithm, HMACAlgorithm
        from cryptography.hazmat.primitives.asymmetric import rsa, ec, ed25519
        from cryptography.hazmat.primitives import serialization

        now = int(time.time())
        claims = {"exp": now + 600, "iat": now, "spout": {"publish": ["orders.*"], "subscribe": ["user.42"]}}
        rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        curves = {"ES256": ec.SECP256R1(), "ES384": ec.SECP384R1(), "ES512": ec.SECP521R1()}
        ec_keys = {alg: ec.generate_private_key(curve) for alg, curve in curves.items()}
        ed_key = ed25519.Ed25519PrivateKey.generate()
        secrets = {"HS256": b"s" * 32, "HS384": b"t" * 48, "HS512": b"u" * 64}

        keys, tokens = [], {}
        def add(alg, signing_key, jwk):
            jwk = dict(jwk, kid=alg, alg=alg, use="sig")
            keys.append(jwk)
            tokens[alg] = jwt.encode(dict(claims, sub="subject-" + alg), signing_key, algorithm=alg,
                                     headers={"kid": alg})
        for alg, secret in secrets.items():
            add(alg, secret, json.loads(HMACAlgorithm.to_jwk(secret)))
        for alg in ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512"]:
            add(alg, rsa_key, json.loads(RSAAlgorithm.to_jwk(rsa_key.public_key())))
        for alg, key in ec_keys.items():
            add(alg, key, json.loads(ECAlgorithm.to_jwk(key.public_key())))
        add("EdDSA", ed_key, json.loads(OKPAlgorithm.to_jwk(ed_key.public_key())))
        expired = jwt.encode(dict(claims, exp=now - 3600), rsa_key, algorithm="RS256", headers={"kid": "RS256"})

        # HS256 over the RS256 key's public PEM (PyJWT refuses to, rightly; Python's hmac does not care).
        def b64(data):
            return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
        pem = rsa_key.public_key().public_bytes(serialization.Encoding.PEM,
                                                serialization.PublicFormat.SubjectPublicKeyInfo)
        signing_input = b64(json.dumps({"alg": "HS256", "kid": "RS256"}).encode()) + "." + b64(json.dumps(claims).encode())
        confused = signing_input + "." + b64(hmac.new(pem, signing_input.encode(), hashlib.sha256).digest())

        weak_key = rsa.generate_private_key(public_exponent=65537, key_size=1024)
        weak_jwk = json.loads(RSAAlgorithm.to_jwk(weak_key.public_key()))
        weak_token = jwt.encode(claims, weak_key, algorithm="RS256")

        print(json.dumps({"jwks": json.dumps({"keys": keys}), "tokens": tokens, "expired": expired,
                          "confused": confused, "weakJWKS": json.dumps({"keys": [weak_jwk]}), "weakToken": weak_token}))
        """#

    /// What the script made.
    struct Made: Decodable {
        let jwks: String
        let tokens: [String: String]
        let expired: String
        let confused: String
        let weakJWKS: String
        let weakToken: String
    }

    static var python: String {
        ProcessInfo.processInfo.environment["SPOUT_PYTHON"].flatMap { $0.isEmpty ? nil : $0 } ?? "python3"
    }

    static var isRequired: Bool {
        !(ProcessInfo.processInfo.environment["SPOUT_REQUIRE_PYTHON_JWT"] ?? "").isEmpty
    }

    static let isAvailable: Bool = {
        (try? run(["-c", "import jwt, cryptography"]))?.status == 0
    }()

    static var testsEnabled: Bool { isRequired || isAvailable }

    static func make() throws -> Made {
        let result = try run(["-c", script])
        guard result.status == 0 else {
            throw PythonSSEClients.PythonFailure(
                status: result.status,
                output: String(decoding: result.output, as: UTF8.self)
            )
        }
        return try JSONDecoder().decode(Made.self, from: result.output)
    }

    /// Runs the Python with `arguments`: its exit status (-1 when a signal ended it or it did not end in time) and
    /// what it wrote on stdout (stderr goes to the test's own).
    private static func run(_ arguments: [String]) throws -> (status: Int32, output: Data) {
        let process = try ChildProcess(
            executable: "/usr/bin/env",
            arguments: [python] + arguments,
            standardOutput: .pipe
        )
        let output = try process.readStandardOutput(timeout: .seconds(120))
        let status = process.wait(timeout: .seconds(10))?.exitStatus ?? -1
        return (status, Data(output))
    }
}
