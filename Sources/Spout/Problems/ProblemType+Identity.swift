/// The problem kinds of signed tokens (JWT, `channels.jwt`) and per-channel rights. Listed in ``ProblemType/all``.
extension ProblemType {
    /// `401`: a token that is not an acceptable JWT.
    static let tokenInvalid = ProblemType(
        slug: "token-invalid",
        title: "Token invalid",
        statuses: [401],
        meaning: """
            The bearer token (header, cookie or ?token=) is neither a configured static token nor an acceptable JWT: \
            it is not a JWS in compact form, its algorithm is refused (alg none, an algorithm Spout does not \
            verify, or one that does not fit the key: an HMAC token checked against a public key), it lists \
            critical extensions (crit), its key is too short (HMAC shorter than its hash, RSA under 2048 bits), \
            its nbf or iat is in the future, or its iss or aud is not the configured one.
            """,
        remedy: "Read detail: it says which check failed. Sign the token with a configured key and algorithm.",
        members: []
    )

    /// `401`: a JWT whose `exp` has passed.
    static let tokenExpired = ProblemType(
        slug: "token-expired",
        title: "Token expired",
        statuses: [401],
        meaning: "The JWT's exp is in the past, beyond the configured leeway (channels.jwt.leewaySeconds).",
        remedy: "Get a new token from whoever issues them, and send it instead.",
        members: []
    )

    /// `401`: a JWT whose signature does not verify.
    static let tokenSignatureInvalid = ProblemType(
        slug: "token-signature-invalid",
        title: "Token signature invalid",
        statuses: [401],
        meaning: "The JWT names a configured key, but its signature does not verify with it: it was altered, or "
            + "signed with another key.",
        remedy: "Send the token exactly as issued; check that the issuer signs with a key of the configured JWK Set.",
        members: []
    )

    /// `401`: a JWT whose key is not configured.
    static let tokenKeyUnknown = ProblemType(
        slug: "token-key-unknown",
        title: "Token key unknown",
        statuses: [401],
        meaning: """
            No key of the configured JWK Set (channels.jwt.jwksFile, channels.jwt.jwksURL) has the JWT's kid, or, \
            for a token without kid, fits its algorithm.
            """,
        remedy: "Sign with a key whose public half (or secret, for HMAC) is in the JWK Set, and name it in kid.",
        members: []
    )

    /// `403`: a valid token whose rights do not include the channel.
    static let channelNotGranted = ProblemType(
        slug: "channel-not-granted",
        title: "Channel not granted",
        statuses: [403],
        meaning: """
            The JWT is valid, but none of the patterns of its spout claim for this operation (spout.publish or \
            spout.subscribe: exact channel names, or prefixes ending in *) matches the channel.
            """,
        remedy: "Ask the token's issuer for a token whose spout claim grants this channel.",
        members: []
    )
}

extension Problem {
    /// `401` ``ProblemType/tokenInvalid``.
    static func tokenInvalid(_ detail: String) -> Problem {
        Problem(status: 401, type: Kind.tokenInvalid, title: ProblemType.tokenInvalid.title, detail: detail)
    }

    /// `401` ``ProblemType/tokenExpired``.
    static func tokenExpired(_ detail: String) -> Problem {
        Problem(status: 401, type: Kind.tokenExpired, title: ProblemType.tokenExpired.title, detail: detail)
    }

    /// `401` ``ProblemType/tokenSignatureInvalid``.
    static func tokenSignatureInvalid(_ detail: String) -> Problem {
        Problem(
            status: 401,
            type: Kind.tokenSignatureInvalid,
            title: ProblemType.tokenSignatureInvalid.title,
            detail: detail
        )
    }

    /// `401` ``ProblemType/tokenKeyUnknown``.
    static func tokenKeyUnknown(_ detail: String) -> Problem {
        Problem(
            status: 401,
            type: Kind.tokenKeyUnknown,
            title: ProblemType.tokenKeyUnknown.title,
            detail: detail
        )
    }

    /// `403` ``ProblemType/channelNotGranted``.
    static func channelNotGranted(_ detail: String) -> Problem {
        Problem(
            status: 403,
            type: Kind.channelNotGranted,
            title: ProblemType.channelNotGranted.title,
            detail: detail
        )
    }
}

extension ProblemType {
    /// `429`: a client publishing faster than channels.publishRatePerMinute.
    static let rateLimited = ProblemType(
        slug: "rate-limited",
        title: "Rate limited",
        statuses: [429],
        meaning: """
            The client (a JWT's sub, a static token, or the client's address when anonymous) published more than \
            channels.publishBurst events at once or more than channels.publishRatePerMinute per minute on average. \
            Nothing was published by this request.
            """,
        remedy: """
            Wait Retry-After seconds (RateLimit says the same, RateLimit-Policy gives the quota) and publish again; \
            publish several events in one request (an array body) rather than one request each.
            """,
        members: []
    )
}

extension Problem {
    /// `429` ``ProblemType/rateLimited``.
    static func rateLimited(_ detail: String) -> Problem {
        Problem(status: 429, type: Kind.rateLimited, title: ProblemType.rateLimited.title, detail: detail)
    }
}

extension ProblemType {
    /// `429`: a subject with channels.maxSubscriptionsPerSubject streams open asked for one more.
    static let tooManySubscriptions = ProblemType(
        slug: "too-many-subscriptions",
        title: "Too many subscriptions",
        statuses: [429],
        meaning: """
            The client (a JWT's sub, a static token, or the client's address when anonymous) already has \
            channels.maxSubscriptionsPerSubject subscription streams open, so no stream was opened.
            """,
        remedy: """
            Close a stream before opening another (EventSource.close(), or leave a page that holds one), or follow \
            several channels on one stream with GET /subscribe. Retry no sooner than Retry-After seconds: \
            sse.heartbeatSeconds rounded up, the longest a stream of a client that went away (a reloaded page, a \
            dropped network) keeps its place before the keep-alive written to it finds it gone.
            """,
        members: [
            Member(name: "retryAfter", jsonType: "integer", meaning: "the seconds to wait, as in Retry-After")
        ]
    )
}

extension Problem {
    /// `429` ``ProblemType/tooManySubscriptions``, answered with `Retry-After: retryAfter` (and the same in the
    /// `retryAfter` member).
    static func tooManySubscriptions(_ detail: String, retryAfter: Int) -> Problem {
        Problem(
            status: 429,
            type: Kind.tooManySubscriptions,
            title: ProblemType.tooManySubscriptions.title,
            detail: detail,
            extensions: [("retryAfter", .integer(retryAfter))]
        )
    }
}
