/// The claims of a JWT payload that Spout reads (RFC 7519 §4.1, and its own `spout` claim); others are ignored.
///
/// **Thread safety:** value type.
struct JWTClaims: Sendable, Equatable {
    /// `sub`: who the token is for, shown in logs.
    var subject: String?
    /// `iss`.
    var issuer: String?
    /// `aud`, one string or a list (RFC 7519 §4.1.3).
    var audience: [String] = []
    /// `exp`, `nbf`, `iat`: seconds since 1970 (NumericDate, fractions allowed).
    var expires: Double?
    var notBefore: Double?
    var issuedAt: Double?
    /// `spout`: the channels the token may publish to and subscribe to. Absent: none.
    var rights = ChannelRights()

    /// Reads `payload`, a JSON object, refusing claims of the wrong type rather than ignoring them.
    static func parse(_ payload: [UInt8]) throws(TokenRefusal) -> JWTClaims {
        try payload.withUnsafeBufferPointer { bytes throws(TokenRefusal) in try parse(bytes) }
    }

    /// ``parse(_:)`` in place (``StrictJSONReader``: no tree is built, only the claims read are decoded).
    static func parse(_ payload: UnsafeBufferPointer<UInt8>) throws(TokenRefusal) -> JWTClaims {
        var claims = JWTClaims()
        var reader = StrictJSONReader(payload)
        try reader.document(notObject: .malformed("the token's payload is not a JSON object"), syntax: syntax) {
            (reader: inout StrictJSONReader, name: StrictJSONReader.Name) throws(TokenRefusal) in
            if reader.name(name, is: "sub") {
                claims.subject = try string(&reader, "sub")
            } else if reader.name(name, is: "iss") {
                claims.issuer = try string(&reader, "iss")
            } else if reader.name(name, is: "aud") {
                switch reader.peek() {
                case .string: claims.audience = [try string(&reader, "aud")]
                case .array:
                    var audience: [String] = []
                    try reader.elements(depth: 1, syntax: syntax) {
                        (reader: inout StrictJSONReader) throws(TokenRefusal) in
                        audience.append(try string(&reader, "aud"))
                    }
                    claims.audience = audience
                default: throw .malformed("the claim aud is neither a string nor a list of strings")
                }
            } else if reader.name(name, is: "exp") {
                claims.expires = try number(&reader, "exp")
            } else if reader.name(name, is: "nbf") {
                claims.notBefore = try number(&reader, "nbf")
            } else if reader.name(name, is: "iat") {
                claims.issuedAt = try number(&reader, "iat")
            } else if reader.name(name, is: "spout") {
                claims.rights = try ChannelRights(reading: &reader)
            } else {
                do throws(StrictJSONReader.SyntaxError) { try reader.skip(depth: 1) } catch { throw syntax(error) }
            }
        }
        return claims
    }

    /// The refusal of a payload that is not JSON.
    static func syntax(_ error: StrictJSONReader.SyntaxError) -> TokenRefusal {
        .malformed("the token's payload is not JSON (\(error.reason))")
    }

    private static func string(_ reader: inout StrictJSONReader, _ name: String) throws(TokenRefusal) -> String {
        guard reader.peek() == .string else { throw .malformed("the claim \(name) is not a string") }
        do throws(StrictJSONReader.SyntaxError) { return try reader.string() } catch { throw syntax(error) }
    }

    private static func number(_ reader: inout StrictJSONReader, _ name: String) throws(TokenRefusal) -> Double {
        guard reader.peek() == .number else {
            throw .malformed("the claim \(name) is not a number of seconds since 1970")
        }
        let number: Double
        do throws(StrictJSONReader.SyntaxError) { number = try reader.number() } catch { throw syntax(error) }
        guard number.isFinite else { throw .malformed("the claim \(name) is not a number of seconds since 1970") }
        return number
    }
}

/// What a token may do to channels: its `spout` claim, `{"publish": [patterns], "subscribe": [patterns]}`.
///
/// A pattern is an exact channel name, or a prefix followed by `*` (which matches every name starting with the
/// prefix; `*` alone matches every channel). `*` anywhere but at the end, or any character a channel name cannot
/// hold, makes the token invalid rather than silently granting less.
///
/// **Thread safety:** value type.
struct ChannelRights: Sendable, Equatable {
    /// Patterns per list, at most (the token's size bounds them too).
    static let maxPatterns = 256

    var publish: [ChannelPattern] = []
    var subscribe: [ChannelPattern] = []

    init(publish: [ChannelPattern] = [], subscribe: [ChannelPattern] = []) {
        self.publish = publish
        self.subscribe = subscribe
    }

    /// The rights of the claim at `reader`'s cursor (the `spout` member's value), read in place.
    init(reading reader: inout StrictJSONReader) throws(TokenRefusal) {
        guard reader.peek() == .object else {
            throw .malformed(#"the claim spout is not an object such as {"publish": [...], "subscribe": [...]}"#)
        }
        var publish: [ChannelPattern] = []
        var subscribe: [ChannelPattern] = []
        try reader.members(depth: 1, syntax: JWTClaims.syntax) {
            (reader: inout StrictJSONReader, name: StrictJSONReader.Name) throws(TokenRefusal) in
            let isPublish = reader.name(name, is: "publish")
            guard isPublish || reader.name(name, is: "subscribe") else {
                do throws(StrictJSONReader.SyntaxError) { try reader.skip(depth: 2) } catch {
                    throw JWTClaims.syntax(error)
                }
                return
            }
            let list = isPublish ? "publish" : "subscribe"
            guard reader.peek() == .array else {
                throw .malformed("spout.\(list) is not a list of at most \(Self.maxPatterns) channel patterns")
            }
            var patterns: [ChannelPattern] = []
            try reader.elements(depth: 2, syntax: JWTClaims.syntax) {
                (reader: inout StrictJSONReader) throws(TokenRefusal) in
                guard patterns.count < Self.maxPatterns else {
                    throw .malformed("spout.\(list) is not a list of at most \(Self.maxPatterns) channel patterns")
                }
                guard reader.peek() == .string else {
                    throw .malformed("spout.\(list) holds a value that is not a string, not a channel name or a prefix")
                }
                let text: String
                do throws(StrictJSONReader.SyntaxError) { text = try reader.string() } catch {
                    throw JWTClaims.syntax(error)
                }
                guard let pattern = ChannelPattern(text) else {
                    throw .malformed(
                        "spout.\(list) holds a string \(ConfigJSON.quote(text)), not a channel name or a prefix ending in *"
                    )
                }
                patterns.append(pattern)
            }
            if isPublish { publish = patterns } else { subscribe = patterns }
        }
        self.init(publish: publish, subscribe: subscribe)
    }

    /// The patterns for `operation`.
    func patterns(for operation: ChannelOperation) -> [ChannelPattern] {
        operation == .publish ? publish : subscribe
    }
}

/// One channel pattern of a token's rights.
enum ChannelPattern: Sendable, Equatable {
    /// This channel only.
    case exact(String)
    /// Every channel whose name starts with this (possibly empty) prefix.
    case prefix(String)

    /// The pattern `text`, or `nil` when it is not a channel name or a prefix of one followed by `*`.
    init?(_ text: String) {
        let bytes = text.utf8
        guard bytes.allSatisfy(Self.isNameByte) || bytes.dropLast().allSatisfy(Self.isNameByte) else { return nil }
        if bytes.last == UInt8(ascii: "*") {
            guard bytes.count <= 128 else { return nil }
            self = .prefix(String(text.dropLast()))
        } else {
            // A whole name, by the rule of channel names (ChannelRoutes.isValidName; a test checks they agree).
            guard bytes.allSatisfy(Self.isNameByte), !bytes.isEmpty, bytes.count <= 128, text != ".", text != ".."
            else { return nil }
            self = .exact(text)
        }
    }

    /// The bytes of a channel name: `A–Z a–z 0–9 . _ ~ -`.
    static func isNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"),
            UInt8(ascii: "-"):
            true
        default: false
        }
    }

    /// Whether `channel` matches.
    func matches(_ channel: String) -> Bool {
        switch self {
        case .exact(let name): channel == name
        case .prefix(let prefix): channel.utf8.starts(with: prefix.utf8)
        }
    }
}

/// What a request does to a channel.
enum ChannelOperation: Sendable, Equatable {
    case publish
    case subscribe
}
