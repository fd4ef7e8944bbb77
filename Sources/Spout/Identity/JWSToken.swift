/// A JWS in compact serialization (RFC 7515 §7.1), split and decoded but not yet verified: the protected header's
/// members Spout reads, the payload, the signing input and the signature.
///
/// Parsing is bounded (``maxBytes``; the header is read by ``StrictJSONReader``, which refuses duplicate members, so
/// no two readers of one header can disagree) and refuses what Spout never accepts: `alg: none` and algorithms
/// it does not implement, and any `crit` member (it understands no extension, and RFC 7515 §4.1.11 says a token
/// naming one it does not understand must be refused). Header members that point at keys (`jku`, `jwk`, `x5u`,
/// `x5c`) are ignored: keys come only from the configured JWK Set.
///
/// Verification uses ``withParsed(_:_:)``, which lends the parts without copying them (the signing input is the
/// token's own bytes; the decoded parts share one temporary buffer); ``parse(_:)`` copies them out.
///
/// **Thread safety:** value type.
struct JWSToken: Sendable {
    /// The `alg` of the protected header.
    let algorithm: JWSAlgorithm
    /// The `kid` of the protected header, if any.
    let keyID: String?
    /// The decoded payload (JSON for a JWT).
    let payload: [UInt8]
    /// `BASE64URL(header) . BASE64URL(payload)`: the bytes the signature covers.
    let signingInput: [UInt8]
    /// The decoded signature.
    let signature: [UInt8]

    /// A token's parts, lent by ``withParsed(_:_:)`` for the length of its closure.
    struct Parts {
        let algorithm: JWSAlgorithm
        let keyID: String?
        let payload: UnsafeBufferPointer<UInt8>
        let signingInput: UnsafeBufferPointer<UInt8>
        let signature: UnsafeBufferPointer<UInt8>
    }

    /// The longest token accepted, in bytes: room for an RSA-4096 signature and a few hundred channel patterns.
    static let maxBytes = 8_192

    /// Splits and decodes `token`, copying its parts.
    static func parse(_ token: some Collection<UInt8>) throws(TokenRefusal) -> JWSToken {
        guard token.count <= maxBytes else { throw .malformed("the token is longer than \(maxBytes) bytes") }
        let bytes = Array(token)
        return try bytes.withUnsafeBufferPointer { buffer throws(TokenRefusal) in
            try withParsed(buffer) { parts throws(TokenRefusal) in
                JWSToken(
                    algorithm: parts.algorithm,
                    keyID: parts.keyID,
                    payload: Array(parts.payload),
                    signingInput: Array(parts.signingInput),
                    signature: Array(parts.signature)
                )
            }
        }
    }

    /// Splits and decodes `token` into a temporary buffer and calls `body` with its parts, which are valid only
    /// during the call.
    static func withParsed<R>(
        _ token: UnsafeBufferPointer<UInt8>,
        _ body: (Parts) throws(TokenRefusal) -> R
    ) throws(TokenRefusal) -> R {
        guard token.count <= maxBytes else { throw .malformed("the token is longer than \(maxBytes) bytes") }
        var firstDot: Int?
        var secondDot: Int?
        for index in token.indices where token[index] == UInt8(ascii: ".") {
            if firstDot == nil {
                firstDot = index
            } else if secondDot == nil {
                secondDot = index
            } else {
                secondDot = nil  // a third dot
                break
            }
        }
        guard let firstDot, let secondDot else {
            throw .malformed("a JWS in compact form has three base64url parts separated by two dots")
        }
        let encodedHeader = UnsafeBufferPointer(rebasing: token[..<firstDot])
        let encodedPayload = UnsafeBufferPointer(rebasing: token[(firstDot + 1)..<secondDot])
        let encodedSignature = UnsafeBufferPointer(rebasing: token[(secondDot + 1)...])
        let result: Result<R, TokenRefusal> = withUnsafeTemporaryAllocation(
            of: UInt8.self,
            capacity: token.count * 3 / 4 + 3
        ) { buffer in
            var free = buffer[...]
            func decode(_ text: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8>? {
                let room = UnsafeMutableBufferPointer(rebasing: free)
                guard let count = Base64URL.decode(text, into: room) else { return nil }
                free = free[(free.startIndex + count)...]
                return UnsafeBufferPointer(rebasing: room[..<count])
            }
            guard let header = decode(encodedHeader), let payload = decode(encodedPayload),
                let signature = decode(encodedSignature)
            else {
                return .failure(.malformed("a part of the token is not unpadded base64url"))
            }
            return Result { () throws(TokenRefusal) in
                let (algorithm, keyID) = try readHeader(header)
                return try body(
                    Parts(
                        algorithm: algorithm,
                        keyID: keyID,
                        payload: payload,
                        signingInput: UnsafeBufferPointer(rebasing: token[..<secondDot]),
                        signature: signature
                    )
                )
            }
        }
        return try result.get()
    }

    /// The header's `alg` and `kid`; refuses `crit` and algorithms Spout does not verify.
    private static func readHeader(_ header: UnsafeBufferPointer<UInt8>) throws(TokenRefusal) -> (
        JWSAlgorithm, String?
    ) {
        var algorithmName: String?
        var keyID: String?
        var reader = StrictJSONReader(header)
        let syntax = { (error: StrictJSONReader.SyntaxError) in
            TokenRefusal.malformed("the token's header is not JSON (\(error.reason))")
        }
        try reader.document(notObject: .malformed("the token's header is not a JSON object"), syntax: syntax) {
            (reader: inout StrictJSONReader, name: StrictJSONReader.Name) throws(TokenRefusal) in
            if reader.name(name, is: "alg") {
                guard reader.peek() == .string else { throw .malformed("the header's alg is not a string") }
                do throws(StrictJSONReader.SyntaxError) { algorithmName = try reader.string() } catch {
                    throw syntax(error)
                }
            } else if reader.name(name, is: "kid") {
                guard reader.peek() == .string else { throw .malformed("the header's kid is not a string") }
                do throws(StrictJSONReader.SyntaxError) { keyID = try reader.string() } catch { throw syntax(error) }
            } else if reader.name(name, is: "crit") {
                throw .unsupported("the header lists critical extensions (crit), none of which Spout understands")
            } else {
                do throws(StrictJSONReader.SyntaxError) { try reader.skip(depth: 1) } catch { throw syntax(error) }
            }
        }
        guard let algorithmName else { throw .malformed("the token's header has no alg") }
        guard let algorithm = JWSAlgorithm(rawValue: algorithmName) else {
            throw .unsupported(
                algorithmName.lowercased() == "none"
                    ? "unsigned tokens (alg none) are never accepted"
                    : "alg \(ConfigJSON.quote(algorithmName)) is not one Spout verifies "
                        + "(\(JWSAlgorithm.allCases.map(\.rawValue).joined(separator: ", ")))"
            )
        }
        return (algorithm, keyID)
    }
}

/// The JWS algorithms Spout verifies (RFC 7518 §3.1; RFC 8037 §3.1 for `EdDSA`, with Ed25519 keys only).
enum JWSAlgorithm: String, Sendable, CaseIterable {
    case hs256 = "HS256"
    case hs384 = "HS384"
    case hs512 = "HS512"
    case rs256 = "RS256"
    case rs384 = "RS384"
    case rs512 = "RS512"
    case ps256 = "PS256"
    case ps384 = "PS384"
    case ps512 = "PS512"
    case es256 = "ES256"
    case es384 = "ES384"
    case es512 = "ES512"
    case edDSA = "EdDSA"

    /// The JWK `kty` a key for this algorithm has.
    var keyType: String {
        switch self {
        case .hs256, .hs384, .hs512: "oct"
        case .rs256, .rs384, .rs512, .ps256, .ps384, .ps512: "RSA"
        case .es256, .es384, .es512: "EC"
        case .edDSA: "OKP"
        }
    }
}

/// Why a token was not accepted. Each maps to one problem type (``problem``).
enum TokenRefusal: Error, Equatable, Sendable {
    /// Not a JWS, or its JSON is not what a JWT holds.
    case malformed(String)
    /// An algorithm or extension Spout refuses (`none`, unknown, `crit`), or a key that does not fit the algorithm.
    case unsupported(String)
    /// No configured key has the token's `kid` (or, without one, fits its algorithm).
    case unknownKey(String)
    /// The signature does not verify.
    case badSignature
    /// `exp` is past (beyond the leeway).
    case expired(String)
    /// `nbf` or `iat` is in the future, or `iss`/`aud` is not the configured one.
    case notAccepted(String)

    /// The `401` problem that answers it.
    var problem: Problem {
        switch self {
        case .malformed(let detail), .unsupported(let detail), .notAccepted(let detail):
            .tokenInvalid(detail)
        case .unknownKey(let detail):
            .tokenKeyUnknown(detail)
        case .badSignature:
            .tokenSignatureInvalid("the token's signature does not verify with the key it names")
        case .expired(let detail):
            .tokenExpired(detail)
        }
    }
}
