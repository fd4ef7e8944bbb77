/// Who may publish to and subscribe to channels.
///
/// - Publishing needs `Authorization: Bearer <token>` with one of `channels.publishTokens`. With none
///   configured, only loopback clients may publish: `swift run spout` demos work, and a service bound to
///   `0.0.0.0` is not an open relay.
/// - Subscribing is open unless `channels.subscribeTokens` is set; then it needs one of them, in the header or
///   (for `EventSource`, which cannot set headers) in the `token` query parameter.
///
/// Tokens are compared in time that does not depend on where they differ, and every configured token is
/// compared, so the answer's timing tells nothing about the tokens.
///
/// **Thread safety:** immutable; shared freely.
struct ChannelAccess: Sendable {
    private let publishTokens: [[UInt8]]
    private let subscribeTokens: [[UInt8]]

    init(configuration: SpoutConfiguration.Channels) {
        publishTokens = configuration.publishTokens.map { Array($0.utf8) }
        subscribeTokens = configuration.subscribeTokens.map { Array($0.utf8) }
    }

    /// Whether a request from `remoteAddress` with `authorization` may publish; the problem to answer if not.
    func checkPublish(authorization: String?, remoteAddress: String) -> Problem? {
        guard !publishTokens.isEmpty else {
            if PeerTrust.isLoopback(remoteAddress) { return nil }
            return .forbidden(
                "no channels.publishTokens are configured, so only loopback clients may publish; configure a token "
                    + "and send Authorization: Bearer <token>"
            )
        }
        guard let token = Self.bearerToken(authorization) else {
            return .unauthorized("publishing needs Authorization: Bearer <token>")
        }
        return Self.matches(token, publishTokens) ? nil : .forbidden("the bearer token may not publish")
    }

    /// Whether a request may subscribe, given its `Authorization` header and its `token` query parameter.
    func checkSubscribe(authorization: String?, queryToken: String?) -> Problem? {
        guard !subscribeTokens.isEmpty else { return nil }
        guard let token = Self.bearerToken(authorization) ?? queryToken.map({ Array($0.utf8) }) else {
            return .unauthorized("subscribing needs Authorization: Bearer <token> or ?token=<token>")
        }
        return Self.matches(token, subscribeTokens) ? nil : .forbidden("the token may not subscribe")
    }

    /// Whether subscribing needs a token (so a `401` should carry `WWW-Authenticate`).
    var subscribingNeedsToken: Bool { !subscribeTokens.isEmpty }

    /// The token of `Bearer <token>` (scheme case-insensitive, RFC 9110 §11.1), or `nil`.
    static func bearerToken(_ header: String?) -> [UInt8]? {
        guard let header else { return nil }
        let bytes = Array(header.utf8)
        guard bytes.count > 7, bytes[..<6].map({ $0 | 0x20 }) == Array("bearer".utf8), bytes[6] == 0x20 else {
            return nil
        }
        var token = bytes[7...]
        while token.first == 0x20 { token = token.dropFirst() }
        while token.last == 0x20 { token = token.dropLast() }
        return token.isEmpty ? nil : Array(token)
    }

    /// Whether `token` is one of `tokens`, comparing all of them without stopping early.
    static func matches(_ token: [UInt8], _ tokens: [[UInt8]]) -> Bool {
        var found: UInt8 = 0
        for candidate in tokens {
            found |= PeerTrust.equalInConstantTime(token, candidate) ? 1 : 0
        }
        return found != 0
    }
}
