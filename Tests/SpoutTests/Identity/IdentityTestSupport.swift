import Foundation
import OpenSSL

@testable import Spout

/// HMAC-signed JWTs for the identity tests (the other algorithms' tokens come from PyJWT, `PythonJWT`, and from
/// the RFCs' examples).
enum TestTokens {
    /// A JWS signed with HMAC under `secret`: the header `{"alg": alg[, "kid": kid]}` (or `header` verbatim) and
    /// `claims` as the payload, both JSON text.
    static func hmac(
        _ claims: String,
        secret: [UInt8],
        alg: String = "HS256",
        kid: String? = nil,
        header: String? = nil
    ) -> String {
        let headerText = header ?? (kid.map { #"{"alg":"\#(alg)","kid":"\#($0)"}"# } ?? #"{"alg":"\#(alg)"}"#)
        let input = Base64URL.encode(Array(headerText.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        let digest: Digest = alg.hasSuffix("512") ? .sha512 : alg.hasSuffix("384") ? .sha384 : .sha256
        let mac = LibCrypto.shared?.hmac(digest, key: secret, message: Array(input.utf8)) ?? []
        return input + "." + Base64URL.encode(mac)
    }

    /// A 32-byte secret.
    static let secret = Array("0123456789abcdef0123456789abcdef".utf8)

    /// A JWK Set of one `oct` key holding `secret`.
    static func octSet(_ secret: [UInt8] = secret, kid: String? = "k1", alg: String? = nil) -> String {
        var members = [#""kty":"oct""#, #""k":"\#(Base64URL.encode(secret))""#]
        if let kid { members.append(#""kid":"\#(kid)""#) }
        if let alg { members.append(#""alg":"\#(alg)""#) }
        return #"{"keys":[{"# + members.joined(separator: ",") + "}]}"
    }

    static func keys(_ json: String) throws -> JWKSet {
        try JWKSet(json: Array(json.utf8))
    }

    /// Seconds since 1970, now.
    static var now: Double { Date().timeIntervalSince1970 }

    /// Writes `text` to a new temporary file and returns its path.
    static func temporaryFile(_ text: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("spout-jwks-\(UUID().uuidString).json")
            .path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }
}
