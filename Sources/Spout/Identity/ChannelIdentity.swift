/// Who a request is, as far as channels go, and what it may do to which channel: the one decision point of the
/// channel routes. ``ChannelAccess/identify(authorization:cookieToken:queryToken:remoteAddress:now:)`` makes it once
/// per request; a route then asks ``mayAccess(channel:for:)`` for each channel it touches (a route serving several
/// channels asks once per channel) and answers ``refusal(channel:for:)`` when the answer is no.
///
/// **Thread safety:** value type.
struct ChannelIdentity: Sendable {
    /// What the request presented.
    enum Credential: Sendable, Equatable {
        /// No token.
        case none
        /// One of `channels.publishTokens` / `channels.subscribeTokens`.
        case staticToken
        /// A verified JWT, with its `sub` when it has one.
        case jwt(subject: String?)
        /// A token that is neither (accepted only where no token is needed).
        case unrecognized
    }

    /// What one operation may touch.
    enum Grant: Sendable {
        /// Every channel.
        case all
        /// No channel; the problem says why.
        case denied(Problem)
        /// The channels a pattern of the token's `spout` claim matches.
        case patterns([ChannelPattern])
    }

    let credential: Credential
    let publish: Grant
    let subscribe: Grant

    /// The JWT's `sub`, for logs.
    var subject: String? {
        if case .jwt(let subject) = credential { subject } else { nil }
    }

    /// Whether the request may do `operation` to `channel`.
    func mayAccess(channel: String, for operation: ChannelOperation) -> Bool {
        switch grant(for: operation) {
        case .all: true
        case .denied: false
        case .patterns(let patterns): patterns.contains { $0.matches(channel) }
        }
    }

    /// Whether the request may do `operation` to every channel (listing them is an operator's read, which needs
    /// an unrestricted publisher).
    func mayAccessEveryChannel(for operation: ChannelOperation) -> Bool {
        switch grant(for: operation) {
        case .all: true
        case .denied: false
        case .patterns(let patterns): patterns.contains(.prefix(""))
        }
    }

    /// The problem that answers a refused `operation` on `channel` (`401` when a token is missing, `403` otherwise).
    func refusal(channel: String, for operation: ChannelOperation) -> Problem {
        switch grant(for: operation) {
        case .denied(let problem):
            return problem
        case .all, .patterns:
            let verb = operation == .publish ? "publish to" : "subscribe to"
            let list = operation == .publish ? "spout.publish" : "spout.subscribe"
            return .channelNotGranted(
                "the token may not \(verb) channel \"\(Routes.clip(channel))\": no pattern of its \(list) claim "
                    + "matches it"
            )
        }
    }

    private func grant(for operation: ChannelOperation) -> Grant {
        operation == .publish ? publish : subscribe
    }
}
