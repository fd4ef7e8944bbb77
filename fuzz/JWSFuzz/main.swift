// libFuzzer entry point for the parsing of signed tokens: a JWS in compact form (`JWSToken.parse`,
// Sources/Spout/Identity/JWSToken.swift), its base64url (`Base64URL`), the strict JSON under its header and payload
// (`StrictJSONReader`, read in place) and the claims read from it (`JWTClaims`, the `spout` claim's channel
// patterns). No signature is checked here (that is OpenSSL's). Besides "no input traps, leaks or hangs":
// - the reader skipping values in place accepts exactly the JSON it accepts building a tree (`ConfigJSON`), objects
//   alike;
// - base64url is canonical: whatever decodes encodes back to the same text;
// - a parsed token's signing input is the input up to its second dot, and its algorithm is one Spout verifies;
// - every refusal is a 401 problem with a bounded detail;
// - the patterns of a parsed `spout` claim are valid, and a pattern matches the names it was made from.

@testable import Spout

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []

    if let decoded = Base64URL.decode(input) {
        let again = Array(Base64URL.encode(decoded).utf8)
        if again != input { fatalError("base64url \(input) decoded to \(decoded), which encodes to \(again)") }
    }

    do {
        let token = try JWSToken.parse(input)
        let secondDot = input.indices.filter { input[$0] == UInt8(ascii: ".") }.dropFirst().first
        guard let secondDot, token.signingInput == Array(input[..<secondDot]) else {
            fatalError("signing input \(token.signingInput) is not the input up to its second dot")
        }
        if JWSAlgorithm(rawValue: token.algorithm.rawValue) == nil { fatalError("unknown algorithm accepted") }
        checkClaims(token.payload)
    } catch {
        checkRefusal(error)
    }
    // The input as a payload too: the claims parser sees JSON directly, not only what base64url lets through.
    checkClaims(input)
    checkSameVerdict(input)
    return 0
}

/// `StrictJSONReader` and `ConfigJSON` agree on `input`: not JSON, JSON but no object, or an object.
private func checkSameVerdict(_ input: [UInt8]) {
    let strict: String
    switch try? ConfigJSON.parse(input) {
    case nil: strict = "syntax"
    case .object?: strict = "object"
    case _?: strict = "notObject"
    }
    let fast = input.withUnsafeBufferPointer { bytes -> String in
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
    if strict != fast { fatalError("ConfigJSON says \(strict), StrictJSONReader says \(fast) of \(input)") }
}

private func checkClaims(_ payload: [UInt8]) {
    do {
        let claims = try JWTClaims.parse(payload)
        for pattern in claims.rights.publish + claims.rights.subscribe {
            switch pattern {
            case .exact(let name):
                if !ChannelPattern.exact(name).matches(name) { fatalError("\(name) does not match itself") }
                if name.isEmpty || name.utf8.count > 128 { fatalError("exact pattern \(name) is not a channel name") }
            case .prefix(let prefix):
                if !ChannelPattern.prefix(prefix).matches(prefix + "x") { fatalError("prefix \(prefix) fails") }
                if !prefix.utf8.allSatisfy(ChannelPattern.isNameByte) { fatalError("prefix \(prefix) has odd bytes") }
            }
        }
    } catch {
        checkRefusal(error)
    }
}

private func checkRefusal(_ refusal: TokenRefusal) {
    let problem = refusal.problem
    if problem.status != 401 { fatalError("refusal \(refusal) answered \(problem.status)") }
    if problem.detail.utf8.count > 1_024 { fatalError("refusal detail of \(problem.detail.utf8.count) bytes") }
}
