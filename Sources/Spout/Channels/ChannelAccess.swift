import Foundation

/// Who may publish to and subscribe to channels: turns a request's credentials into a ``ChannelIdentity``.
///
/// Three ways to authorize, which may be combined:
/// - **None configured**: only loopback clients may publish (`swift run spout` demos work, and a service bound to
///   `0.0.0.0` is not an open relay); anyone may subscribe.
/// - **Static tokens**: `Authorization: Bearer <token>` with one of `channels.publishTokens` may publish to (and
///   list) every channel; one of `channels.subscribeTokens` may subscribe to every channel. With subscribe tokens
///   set, subscribing needs one (in the header or, for `EventSource`, in `?token=`).
/// - **Signed tokens** (`channels.jwt.jwksFile`): a JWT verified by ``TokenVerifier`` may do what its `spout`
///   claim grants, channel by channel. With JWT on, both publishing and subscribing need a token. A subscription's
///   token may also come in the cookie `channels.jwt.cookieName` (never a publish's: a cookie rides along with
///   requests a page did not mean to send).
///
/// Static tokens are compared in time that does not depend on where they differ, and every configured token is
/// compared, so the answer's timing tells nothing about the tokens.
///
/// **Thread safety:** immutable, apart from the verifier's own guarded state; shared freely.
struct ChannelAccess: Sendable {
    private let publishTokens: [[UInt8]]
    private let subscribeTokens: [[UInt8]]
    /// The JWT verifier, when `channels.jwt` has keys.
    let tokens: TokenVerifier?
    /// Why the JWK Set file could not be read, when it could not (every JWT is then refused as unknown-key).
    let keyLoadFailure: String?
    /// Keeps the keys of `channels.jwt.jwksURL`, when it is set (started here; stopped by ``stop()``).
    let keyRefresher: JWKSRefresher?
    /// The cookie that may carry a subscription's token, or `nil`.
    let cookieName: String?
    /// The proxies whose forwarding fields name the client (`trustedProxies`).
    let proxies: TrustedProxies
    /// Per-client publish limits, when `channels.publishRatePerMinute` is set.
    let publishLimiter: PublishRateLimiter?
    /// The cap on open subscription streams per client, when `channels.maxSubscriptionsPerSubject` is set.
    let subscriptionQuota: SubscriptionQuota?

    /// - Parameters:
    ///   - trustedProxies: `trustedProxies`, checked when the configuration was loaded (an entry that does not
    ///     parse here trusts no proxy at all).
    ///   - events, registry: Where the JWKS URL's fetches are logged and counted.
    ///   - fetchKeys: How the JWKS URL is fetched; `nil`: over HTTP, on a ``CurlDriver`` thread of its own.
    init(
        configuration: SpoutConfiguration.Channels,
        trustedProxies: [String] = [],
        events: EventLog? = nil,
        registry: MetricsRegistry? = nil,
        fetchKeys: JWKSRefresher.Fetch? = nil
    ) {
        proxies = TrustedProxies(trustedProxies) ?? .none
        publishLimiter =
            configuration.publishRatePerMinute > 0
            ? PublishRateLimiter(perMinute: configuration.publishRatePerMinute, burst: configuration.publishBurst) : nil
        subscriptionQuota =
            configuration.maxSubscriptionsPerSubject > 0
            ? SubscriptionQuota(maxPerSubject: configuration.maxSubscriptionsPerSubject) : nil
        publishTokens = configuration.publishTokens.map { Array($0.utf8) }
        subscribeTokens = configuration.subscribeTokens.map { Array($0.utf8) }
        let jwt = configuration.jwt
        cookieName = jwt.cookieName.isEmpty ? nil : jwt.cookieName
        guard jwt.isEnabled else {
            tokens = nil
            keyLoadFailure = nil
            keyRefresher = nil
            return
        }
        var keys = JWKSet(keys: [])
        var failure: String?
        if !jwt.jwksFile.isEmpty {
            switch JWKSet.load(file: jwt.jwksFile) {
            case .success(let loaded): keys = loaded
            case .failure(let error): failure = error.reason
            }
        }
        keyLoadFailure = failure
        let tokens = TokenVerifier(
            keys: keys,
            settings: TokenVerifier.Settings(
                leewaySeconds: jwt.leewaySeconds,
                issuer: jwt.issuer.isEmpty ? nil : jwt.issuer,
                audience: jwt.audience.isEmpty ? nil : jwt.audience,
                cacheEntries: jwt.cacheEntries
            )
        )
        self.tokens = tokens
        if !jwt.jwksURL.isEmpty, let url = URL(string: jwt.jwksURL) {
            let refresher = JWKSRefresher(
                url: jwt.jwksURL,
                fileKeys: keys,
                verifier: tokens,
                refreshSeconds: jwt.jwksRefreshSeconds,
                minRefreshSeconds: jwt.jwksMinRefreshSeconds,
                fetch: fetchKeys ?? JWKSRefresher.fetch(url: url, session: UpstreamSession()),
                events: events,
                registry: registry
            )
            refresher.start()
            keyRefresher = refresher
        } else {
            keyRefresher = nil
        }
    }

    /// Stops refreshing the JWKS URL's keys.
    func stop() {
        keyRefresher?.stop()
    }

    /// Whether subscribing needs a token (so a `401` should carry `WWW-Authenticate`).
    var subscribingNeedsToken: Bool { !subscribeTokens.isEmpty || tokens != nil }

    /// The identity of a request: its `Authorization` header, the token of its cookie (subscriptions only), its
    /// `token` query parameter (subscriptions only), in that order of precedence; and the client's address. A
    /// token that claims to be a JWT but is not valid is a `401` here, whatever the route.
    func identify(
        authorization: String?,
        cookieToken: String? = nil,
        queryToken: String? = nil,
        remoteAddress: String,
        now: Double = Date().timeIntervalSince1970
    ) -> Result<ChannelIdentity, Problem> {
        let publishOnLoopbackOnly = publishTokens.isEmpty && tokens == nil
        let subscribeOpen = subscribeTokens.isEmpty && tokens == nil
        let loopbackRule = ChannelIdentity.Grant.denied(
            .forbidden(
                "no channels.publishTokens are configured, so only loopback clients may publish; configure a token "
                    + "and send Authorization: Bearer <token>"
            )
        )
        let anonymousPublish: ChannelIdentity.Grant
        if !publishOnLoopbackOnly {
            anonymousPublish = .denied(.unauthorized("publishing needs Authorization: Bearer <token>"))
        } else if !proxies.isEmpty {
            anonymousPublish = .denied(
                .forbidden(
                    "trustedProxies is set and no channels.publishTokens or channels.jwt keys are configured: behind a "
                        + "proxy, being on loopback says nothing about the client, so nobody may publish; configure a "
                        + "token"
                )
            )
        } else {
            anonymousPublish = PeerTrust.isLoopback(remoteAddress) ? .all : loopbackRule
        }
        guard
            let token = Self.bearerToken(authorization) ?? cookieToken.map({ Array($0.utf8) })
                ?? queryToken.map({ Array($0.utf8) })
        else {
            let subscribe: ChannelIdentity.Grant =
                subscribeOpen
                ? .all
                : .denied(
                    .unauthorized(
                        "subscribing needs Authorization: Bearer <token> or ?token=<token>"
                            + (cookieName.map { " or the cookie \($0)" } ?? "")
                    )
                )
            return .success(ChannelIdentity(credential: .none, publish: anonymousPublish, subscribe: subscribe))
        }
        let mayPublish = Self.matches(token, publishTokens)
        let maySubscribe = Self.matches(token, subscribeTokens)
        if mayPublish || maySubscribe {
            return .success(
                ChannelIdentity(
                    credential: .staticToken,
                    publish: mayPublish ? .all : .denied(.forbidden("the bearer token may not publish")),
                    subscribe: maySubscribe || subscribeOpen ? .all : .denied(.forbidden("the token may not subscribe"))
                )
            )
        }
        if let tokens {
            switch tokens.verify(String(decoding: token, as: UTF8.self), now: now) {
            case .failure(let refusal):
                if case .unknownKey(let detail) = refusal {
                    if let keyRefresher {
                        keyRefresher.keyUnknown()
                        if let fetchFailure = keyRefresher.lastFailure {
                            return .failure(
                                .tokenKeyUnknown("\(detail); the JWKS URL could not be fetched: \(fetchFailure)")
                            )
                        }
                    }
                    if let keyLoadFailure {
                        return .failure(
                            .tokenKeyUnknown("\(detail); the JWK Set file could not be read: \(keyLoadFailure)")
                        )
                    }
                }
                return .failure(refusal.problem)
            case .success(let claims):
                return .success(
                    ChannelIdentity(
                        credential: .jwt(subject: claims.subject),
                        publish: .patterns(claims.rights.publish),
                        subscribe: .patterns(claims.rights.subscribe)
                    )
                )
            }
        }
        return .success(
            ChannelIdentity(
                credential: .unrecognized,
                publish: publishOnLoopbackOnly
                    ? anonymousPublish : .denied(.forbidden("the bearer token may not publish")),
                subscribe: subscribeOpen ? .all : .denied(.forbidden("the token may not subscribe"))
            )
        )
    }

    /// The channel-less check of the static rules: the problem refusing a request from `remoteAddress` with
    /// `authorization` that may not publish to every channel, or `nil`. Routes that know their channel use
    /// ``identify(authorization:cookieToken:queryToken:remoteAddress:now:)`` and ``ChannelIdentity/mayAccess(channel:for:)``.
    func checkPublish(authorization: String?, remoteAddress: String) -> Problem? {
        refusalForEveryChannel(.publish, identify(authorization: authorization, remoteAddress: remoteAddress))
    }

    /// The channel-less check of subscribing to every channel, as ``checkPublish(authorization:remoteAddress:)``.
    func checkSubscribe(authorization: String?, queryToken: String?) -> Problem? {
        refusalForEveryChannel(
            .subscribe,
            identify(authorization: authorization, queryToken: queryToken, remoteAddress: "")
        )
    }

    private func refusalForEveryChannel(
        _ operation: ChannelOperation,
        _ identified: Result<ChannelIdentity, Problem>
    ) -> Problem? {
        switch identified {
        case .failure(let problem): return problem
        case .success(let identity):
            if identity.mayAccessEveryChannel(for: operation) { return nil }
            return identity.refusal(channel: "*", for: operation)
        }
    }

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
