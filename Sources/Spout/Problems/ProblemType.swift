import HTTPServer

/// One kind of problem Spout reports: the `type` URI of its RFC 9457 body, its title, the statuses it comes
/// with, and the explanation served at that URI (`GET /problems/{slug}`), so that a `type` a developer pastes
/// into a browser answers with what it means and what to do.
///
/// Every kind Spout can emit is in ``all``; ``Problem/Kind`` names their URIs, and nothing else may be used
/// as a problem's `type` (a test scans the sources for other `/problems/` literals). The OpenAPI document
/// lists the same catalogue. To add a kind: add a `static let` here, put it in ``all``, and use
/// `Problem.Kind.<name>` (or a factory on ``Problem``) where it is raised.
///
/// **Thread safety:** value type; immutable.
struct ProblemType: Sendable, Equatable {
    /// The last segment of the URI: `invalid-parameter`.
    let slug: String
    /// The problem's `title`, the same for every occurrence.
    let title: String
    /// The HTTP statuses a problem of this kind is sent with.
    let statuses: [Int]
    /// What it means, in a sentence or two.
    let meaning: String
    /// What a client can do about it.
    let remedy: String
    /// The extension members this kind may carry, with what each holds.
    let members: [Member]

    /// One extension member of a problem body.
    struct Member: Sendable, Equatable {
        /// The member's name, e.g. `parameter`.
        let name: String
        /// `string` or `integer`, as in JSON Schema.
        let jsonType: String
        /// What the member holds.
        let meaning: String

        /// A member holding a JSON string.
        static func string(_ name: String, _ meaning: String) -> Member {
            Member(name: name, jsonType: "string", meaning: meaning)
        }

        /// A member holding a JSON integer.
        static func integer(_ name: String, _ meaning: String) -> Member {
            Member(name: name, jsonType: "integer", meaning: meaning)
        }

        /// `attempts`, on the upstream kinds.
        static let attempts = integer("attempts", "how many attempts were made, when more than one")

        /// `part`, on the upstream kinds a dashboard reports.
        static let dashboardPart = string("part", "the part of a dashboard that failed (in its errors list)")

        /// `step`, on the kinds a workflow step can fail with.
        static let workflowStep = string("step", "the workflow step that failed, on /workflow")
    }

    /// The `type` URI, a reference relative to the service: `/problems/invalid-parameter`.
    var uri: String { Self.pathPrefix + slug }

    /// Where the explanations live.
    static let pathPrefix = "/problems/"

    /// The kind whose ``uri`` is `uri`, if any.
    static func named(uri: String) -> ProblemType? {
        all.first { $0.uri == uri }
    }

    /// The kind whose ``slug`` is `slug`, if any.
    static func named(slug: String) -> ProblemType? {
        all.first { $0.slug == slug }
    }
}

extension ProblemType {
    /// Every kind Spout emits, in the order the document lists them.
    static let all: [ProblemType] = [
        invalidParameter, notFound, methodNotAllowed, notAcceptable, upstreamFailed, upstreamTimeout,
        upstreamUnavailable, unavailable, invalidBody, contentTooLarge, requestHeadTooLarge, unsupportedMediaType,
        unauthorized, forbidden, outcomeUnknown, idempotencyKeyInFlight, idempotencyKeyReused, tokenInvalid,
        tokenExpired, tokenSignatureInvalid, tokenKeyUnknown, channelNotGranted, rateLimited, tooManySubscriptions,
    ]

    /// `400`: a query parameter, path segment or header is malformed, out of range or unknown.
    static let invalidParameter = ProblemType(
        slug: "invalid-parameter",
        title: "Invalid parameter",
        statuses: [400],
        meaning: """
            A query parameter, a path segment or a request header (Last-Event-ID, Idempotency-Key) is malformed, out of range, \
            given twice, or not one the route knows. Unknown parameters are refused rather than ignored, so a \
            typo such as cout=5 cannot quietly turn a short stream into an endless one.
            """,
        remedy: """
            Read detail: it names the input, shows what was sent and the allowed range. The route's parameters \
            and their limits are in /openapi.json.
            """,
        members: [.string("parameter", "the name of the offending input")]
    )

    /// `404`: nothing at this path, or no such record upstream.
    static let notFound = ProblemType(
        slug: "not-found",
        title: "Not found",
        statuses: [404],
        meaning: """
            Nothing is served at this path: an unknown route or sequence, a record (article, user) that the \
            upstream API does not have, or a channel with no event yet (GET /channels/{name}/latest).
            """,
        remedy: """
            Check the path against /openapi.json; GET /sequences lists the sequences, GET /channels the channels.
            """,
        members: [
            .string("upstream", "the upstream resource that was missing, when one was"),
            .integer("upstreamStatus", "the upstream's status (404), when it answered"),
            .workflowStep,
        ]
    )

    /// `405`: the path exists under other methods.
    static let methodNotAllowed = ProblemType(
        slug: "method-not-allowed",
        title: "Method not allowed",
        statuses: [405],
        meaning: """
            The path exists, but not for this method. Spout's routes answer GET, HEAD and OPTIONS, except \
            POST /channels/{name}/events, which answers POST and OPTIONS.
            """,
        remedy: "Use one of the methods in the Allow header (repeated in the allow member).",
        members: [.string("allow", "the methods the path answers, comma-separated")]
    )

    /// `406`: `Accept` excludes every representation the route has.
    static let notAcceptable = ProblemType(
        slug: "not-acceptable",
        title: "Not acceptable",
        statuses: [406],
        meaning: """
            The Accept header excludes every representation the route can produce (text/event-stream, \
            application/x-ndjson, application/json, depending on the route).
            """,
        remedy: "Accept one of the media types listed in detail, or pick one with ?format= where the route has it.",
        members: []
    )

    /// `502`: the upstream API failed after the retries.
    static let upstreamFailed = ProblemType(
        slug: "upstream-failed",
        title: "Upstream failed",
        statuses: [502],
        meaning: """
            The upstream JSON API behind the route could not be reached, answered with an error status, or sent \
            a body Spout could not read or one larger than its limit, after the configured retries.
            """,
        remedy: "Retry later; the failure is not cached. detail says what the upstream did.",
        members: [
            .string("upstream", "the upstream resource that failed"),
            .integer("upstreamStatus", "the upstream's last status, when it answered"),
            .attempts,
            .integer("limit", "the body limit in bytes (upstream.maxBodyBytes), when the upstream's body was larger"),
            .dashboardPart,
            .workflowStep,
        ]
    )

    /// `504`: the upstream API did not answer in time.
    static let upstreamTimeout = ProblemType(
        slug: "upstream-timeout",
        title: "Upstream timeout",
        statuses: [504],
        meaning: "The upstream JSON API did not answer within the per-attempt timeout or the call's deadline.",
        remedy: "Retry later; the failure is not cached.",
        members: [
            .string("upstream", "the upstream resource that timed out"),
            .attempts,
            .dashboardPart,
            .workflowStep,
        ]
    )

    /// `503`: the upstream asked to be called later than the call could wait.
    static let upstreamUnavailable = ProblemType(
        slug: "upstream-unavailable",
        title: "Upstream unavailable",
        statuses: [503],
        meaning: """
            The upstream JSON API answered 429 or 503 with a Retry-After, and Spout never calls an upstream before \
            the time it asked for: that time was past the call's deadline (upstream.deadlineSeconds), or the \
            retries ran out. Nothing was fetched.
            """,
        remedy: "Retry after Retry-After seconds (the upstream's own wait, rounded up to whole seconds).",
        members: [
            .string("upstream", "the upstream resource that asked for the wait"),
            .integer("upstreamStatus", "the upstream's status, 429 or 503"),
            .attempts,
            .integer("retryAfter", "the seconds to wait, as in Retry-After"),
            .dashboardPart,
            .workflowStep,
        ]
    )

    /// `503`: the service is shutting down or over capacity.
    static let unavailable = ProblemType(
        slug: "unavailable",
        title: "Service unavailable",
        statuses: [503],
        meaning: """
            The service is shutting down or over capacity and does not take this request: too many \
            connections, a channel route at channels.maxChannels, channels.maxSubscribersPerChannel or \
            channels.idempotencyMaxKeys, or the channels' Redis unreachable. A publish refused this way stored \
            nothing (when that is not certain, the problem is outcome-unknown instead).
            """,
        remedy: """
            Retry after Retry-After seconds when it is given, preferably on another instance; GET /ready says \
            whether this one takes traffic.
            """,
        members: []
    )

    /// `400`: a request body that is not what the route takes.
    static let invalidBody = ProblemType(
        slug: "invalid-body",
        title: "Invalid body",
        statuses: [400],
        meaning: """
            The request body is not valid JSON, or not the shape the route takes: POST /channels/{name}/events \
            takes {"data": <any JSON>, "event": "<type>"} or a non-empty array of such objects, and nothing else.
            """,
        remedy: "Read detail: it names the member or the offset where the body went wrong.",
        members: []
    )

    /// `413`: an event larger than the configured limit.
    static let contentTooLarge = ProblemType(
        slug: "content-too-large",
        title: "Content too large",
        statuses: [413],
        meaning: """
            An event's data is larger than channels.maxEventBytes (counted as compact JSON). Bodies larger than \
            limits.maxBodyBytes are refused by the server before they are read.
            """,
        remedy: "Send smaller events, or publish a reference (a URL, an id) to the large payload instead.",
        members: []
    )

    /// `414` or `431`: a request line or header fields over the server's limits, refused before routing.
    static let requestHeadTooLarge = ProblemType(
        slug: "request-head-too-large",
        title: "Request head too large",
        statuses: [414, 431],
        meaning: """
            The server refused the request before any route read it, and closed the connection: its request line \
            (method, path and query) is longer than \(RequestParser.Configuration().maxRequestLineBytes) bytes \
            (414), or its header fields are larger than limits.maxHeaderBytes or more than limits.maxHeaderCount \
            (431). Any route can answer this.
            """,
        remedy: """
            Send a shorter URL (Spout's queries are short: a long one is usually a client building it in a loop) \
            or fewer and smaller headers (large cookies are the usual cause of a 431), then send again on a new \
            connection.
            """,
        members: []
    )

    /// `415`: a body in a media type the route does not read.
    static let unsupportedMediaType = ProblemType(
        slug: "unsupported-media-type",
        title: "Unsupported media type",
        statuses: [415],
        meaning: "The route reads JSON bodies only, and the request's Content-Type is something else or missing.",
        remedy: "Send Content-Type: application/json.",
        members: []
    )

    /// `401`: a token is needed and none was sent.
    static let unauthorized = ProblemType(
        slug: "unauthorized",
        title: "Unauthorized",
        statuses: [401],
        meaning: """
            The route needs a bearer token (channels.publishTokens to publish, channels.subscribeTokens to \
            subscribe when set) and the request carried none.
            """,
        remedy: "Send Authorization: Bearer <token> (EventSource, which cannot set headers, may use ?token=).",
        members: []
    )

    /// `403`: the token sent, or the client's address, may not do this.
    static let forbidden = ProblemType(
        slug: "forbidden",
        title: "Forbidden",
        statuses: [403],
        meaning: """
            The token sent is not one of those configured, or, with no publish token configured, the client is not \
            on the loopback interface (only local clients may publish then, so a service bound to 0.0.0.0 is not \
            an open relay).
            """,
        remedy: "Use a configured token; operators configure them in channels.publishTokens / subscribeTokens.",
        members: []
    )

    /// `503`: a publish whose outcome Spout does not know (Redis took the command but did not confirm it).
    static let outcomeUnknown = ProblemType(
        slug: "outcome-unknown",
        title: "Outcome unknown",
        statuses: [503],
        meaning: """
            The publish was sent to the channels' Redis, which did not confirm it in time (it stalled, or the \
            connection broke after the command was written). The events may have been stored, and may be \
            delivered, or not: Spout cannot tell. Unlike unavailable (503 with "nothing was stored"), a blind \
            retry may publish them twice.
            """,
        remedy: """
            Retry after Retry-After seconds with the same Idempotency-Key: if the first attempt was stored, the \
            retry answers its ids and publishes nothing; if not, it publishes once. Without a key, a retry can \
            duplicate the events; subscribers that must not see a duplicate need a key on every publish.
            """,
        members: []
    )

    /// `409`: the same `Idempotency-Key` is still being answered.
    static let idempotencyKeyInFlight = ProblemType(
        slug: "idempotency-key-in-flight",
        title: "Idempotency key in flight",
        statuses: [409],
        meaning: """
            A publish with this Idempotency-Key on this channel is still being answered by this instance (its \
            twin was sent before the first got its answer). Nothing was published by this request. Over Redis, \
            a twin sent to another replica is not refused: Redis runs one publish at a time, so it answers the \
            first one's ids once that is stored.
            """,
        remedy: "Wait for the first request's answer, or retry later with the same key and body.",
        members: []
    )

    /// `422`: an `Idempotency-Key` used again with another body.
    static let idempotencyKeyReused = ProblemType(
        slug: "idempotency-key-reused",
        title: "Idempotency key reused",
        statuses: [422],
        meaning: """
            This Idempotency-Key was used on this channel, within channels.idempotencyWindowSeconds, for a \
            publish with another body (bodies are compared byte for byte, by their SHA-256). Nothing was published.
            """,
        remedy: "Use a new key for a new publish; a retry must send the same body as the first attempt.",
        members: []
    )
}
