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
        let json: ConfigJSON
        do {
            json = try ConfigJSON.parse(payload)
        } catch {
            throw .malformed("the token's payload is not JSON (\(error.reason))")
        }
        guard case .object(let members) = json else { throw .malformed("the token's payload is not a JSON object") }
        var claims = JWTClaims()
        for (name, value) in members {
            switch name {
            case "sub": claims.subject = try string(value, name)
            case "iss": claims.issuer = try string(value, name)
            case "aud":
                switch value {
                case .string(let text): claims.audience = [text]
                case .array(let items):
                    claims.audience = try items.map { item throws(TokenRefusal) in try string(item, name) }
                default: throw .malformed("the claim aud is neither a string nor a list of strings")
                }
            case "exp": claims.expires = try number(value, name)
            case "nbf": claims.notBefore = try number(value, name)
            case "iat": claims.issuedAt = try number(value, name)
            case "spout": claims.rights = try ChannelRights(claim: value)
            default: continue
            }
        }
        return claims
    }

    private static func string(_ value: ConfigJSON, _ name: String) throws(TokenRefusal) -> String {
        guard case .string(let text) = value else { throw .malformed("the claim \(name) is not a string") }
        return text
    }

    private static func number(_ value: ConfigJSON, _ name: String) throws(TokenRefusal) -> Double {
        guard case .number(_, let number) = value, number.isFinite else {
            throw .malformed("the claim \(name) is not a number of seconds since 1970")
        }
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

    /// The rights of the claim `value`.
    init(claim value: ConfigJSON) throws(TokenRefusal) {
        guard case .object(let members) = value else {
            throw .malformed(#"the claim spout is not an object such as {"publish": [...], "subscribe": [...]}"#)
        }
        for (name, list) in members {
            guard name == "publish" || name == "subscribe" else { continue }
            guard case .array(let items) = list, items.count <= Self.maxPatterns else {
                throw .malformed("spout.\(name) is not a list of at most \(Self.maxPatterns) channel patterns")
            }
            var patterns: [ChannelPattern] = []
            for item in items {
                guard case .string(let text) = item, let pattern = ChannelPattern(text) else {
                    throw .malformed(
                        "spout.\(name) holds \(item.summary), not a channel name or a prefix ending in *"
                    )
                }
                patterns.append(pattern)
            }
            if name == "publish" { publish = patterns } else { subscribe = patterns }
        }
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
        let bytes = Array(text.utf8)
        guard bytes.allSatisfy(Self.isNameByte) || bytes.dropLast().allSatisfy(Self.isNameByte) else { return nil }
        if bytes.last == UInt8(ascii: "*") {
            guard bytes.count <= 128 else { return nil }
            self = .prefix(String(decoding: bytes.dropLast(), as: UTF8.self))
        } else {
            // A whole name, by the rule of channel names (ChannelRoutes.isValidName; a test checks they agree).
            guard !bytes.isEmpty, bytes.count <= 128, text != ".", text != ".." else { return nil }
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
