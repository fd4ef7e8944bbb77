import Sequences

/// Spout's HTTP API as OpenAPI 3.1 data: every route's operation, and the schemas they share. The document
/// served at `/openapi.json` is rendered from this once at start-up, with the configured limits filled in.
///
/// A test compares ``operations(configuration:)`` with the router (every route is here and nothing else),
/// with the query parameters each route accepts (asked of the running service), and with the problem
/// catalogue. A new route (the `/channels…` family, say) adds its `router.add` in ``Routes/makeRouter()``
/// and its ``APIOperation`` here; schemas it shares go in ``schemas``, security schemes in ``securitySchemes``.
///
/// **Thread safety:** stateless.
enum SpoutAPI {
    /// The schema of a problem of one of `types`: the shared `Problem` with `type` fixed (a `const` for one
    /// type, an `enum` for several).
    static func problemSchema(_ types: [ProblemType]) -> JSONValue {
        let type: JSONValue =
            types.count == 1
            ? ["const": .string(types[0].uri)] : ["enum": .array(types.map { .string($0.uri) })]
        return ["allOf": [reference("Problem")], "properties": ["type": type]]
    }

    static func problemSchema(_ type: ProblemType) -> JSONValue { problemSchema([type]) }

    /// A reference to the shared schema `name`.
    static func reference(_ name: String) -> JSONValue {
        ["$ref": .string("#/components/schemas/\(name)")]
    }

    /// Every operation, in the order the document lists them.
    static func operations(configuration: SpoutConfiguration) -> [APIOperation] {
        serviceOperations + sequenceOperations(configuration.sequences) + upstreamOperations + demoOperations
            + channelOperations(configuration) + multiChannelOperations(configuration) + clientOperations
    }

    // MARK: - Parameter schemas

    /// A `{id}` path segment: digits, at most 18 of them, not 0.
    static let positiveIdentifier: JSONValue = ["type": "integer", "minimum": 1, "maximum": 999_999_999_999_999_999]
    /// A positive query integer (`userId`).
    static let positiveInteger: JSONValue = ["type": "integer", "minimum": 1, "maximum": .integer(Int.max)]
    static let formats: JSONValue = ["type": "string", "enum": ["sse", "ndjson", "json"]]
    static let lastEventID = APIParameter.header(
        "Last-Event-ID",
        """
        SSE only: the id of the last event received. The stream resumes after it; past the end of a finite \
        stream the answer is 204, which stops EventSource's reconnects.
        """,
        ["type": "string", "pattern": "^[0-9]{1,18}$"]
    )
    /// The request headers every operation reads: the request ID and the W3C trace context.
    static let correlationParameters: [APIParameter] = [
        .header(
            "X-Request-ID",
            "Echoed on the response, logged and forwarded upstream; an invalid one is replaced by a generated one.",
            ["type": "string"]
        ),
        .header(
            "traceparent",
            "W3C Trace Context; continued when valid (a new trace is started otherwise) and forwarded upstream.",
            ["type": "string"]
        ),
        .header("tracestate", "W3C Trace Context; kept with a valid traceparent.", ["type": "string"]),
    ]
    /// The answers the HTTP server gives any request before routing when its head is over a limit (a long query
    /// string reaches every operation), as `application/problem+json` of `request-head-too-large`.
    static let headRefusals: [APIResponse] = [
        .problem(414, .requestHeadTooLarge), .problem(431, .requestHeadTooLarge),
    ]
    static let ifNoneMatch = APIParameter.header(
        "If-None-Match",
        "Entity tags of stored copies; a match (weak comparison, or `*`) gets 304.",
        ["type": "string"]
    )
    static let notModified = APIResponse(
        304,
        "Not modified: the copy whose ETag matched If-None-Match is current.",
        headers: [
            ("ETag", "The tag that matched.", ["type": "string"]),
            ("Cache-Control", "As on the 200.", ["type": "string"]),
        ]
    )
    /// One server-sent event as a client's parser dispatches it (WHATWG HTML §9.2; OpenAPI before 3.2 lets
    /// `schema` describe each event of a `text/event-stream`): `event` (`message` when the stream names
    /// none), `data`, and the last `id` seen.
    static func serverSentEvent(_ events: String, data: String) -> JSONValue {
        [
            "type": "object",
            "description": .string(
                "One event. `retry:` and `: keep-alive` comments come besides; they are not events. \(events)"
            ),
            "properties": [
                "event": ["type": "string"],
                "data": ["type": "string", "description": .string(data)],
                "id": ["type": "string"],
                "retry": ["type": "integer", "minimum": 0],
            ],
            "required": ["event", "data"],
        ]
    }

    /// One line of an `application/x-ndjson` stream (as for SSE, the schema describes one item).
    static func ndjsonLine(_ description: String) -> JSONValue {
        ["type": "object", "description": .string("One line, a JSON object. \(description)")]
    }

    // MARK: - Operations

    static let serviceOperations: [APIOperation] = [
        APIOperation(
            "GET",
            "/health",
            id: "getHealth",
            tag: "service",
            summary: "Liveness",
            description: "200 while the process serves requests. Never cached (`Cache-Control: no-store`).",
            responses: [.json(200, "The process is alive.", reference("Health"))]
        ),
        APIOperation(
            "GET",
            "/ready",
            id: "getReady",
            tag: "service",
            summary: "Readiness",
            description: "200 once started; 503 while starting or draining. Never cached.",
            responses: [
                .json(200, "Ready for traffic.", reference("Ready")),
                .json(503, "Starting or draining: send traffic elsewhere.", reference("Ready")),
            ]
        ),
        APIOperation(
            "GET",
            "/metrics",
            id: "getMetrics",
            tag: "service",
            summary: "Prometheus metrics",
            description: "The Prometheus text exposition format 0.0.4. Never cached.",
            responses: [
                APIResponse(
                    200,
                    "The metrics.",
                    content: [("text/plain; version=0.0.4; charset=utf-8", ["type": "string"])]
                )
            ]
        ),
        APIOperation(
            "GET",
            "/openapi.json",
            id: "getOpenAPI",
            tag: "service",
            summary: "This document",
            description: "OpenAPI 3.1, generated from the service's own route data and configured limits.",
            parameters: [ifNoneMatch],
            responses: [
                .json(200, "The OpenAPI document.", ["type": "object"], headers: validatorHeaders),
                notModified,
                .problem(400, .invalidParameter),
            ]
        ),
        APIOperation(
            "GET",
            "/problems/{type}",
            id: "getProblemType",
            tag: "service",
            summary: "What a problem type means",
            description: "The page a problem's `type` URI resolves to: its meaning, statuses, members and remedy.",
            parameters: [
                .path(
                    "type",
                    "The last segment of the problem's type URI.",
                    [
                        "type": "string", "enum": .array(ProblemType.all.map { .string($0.slug) }),
                    ]
                ),
                ifNoneMatch,
            ],
            responses: [
                APIResponse(
                    200,
                    "An HTML page describing the problem type.",
                    content: [("text/html; charset=utf-8", ["type": "string"])],
                    headers: validatorHeaders
                ),
                notModified,
                .problem(400, .invalidParameter),
                .problem(404, .notFound),
            ]
        ),
    ]

    static let validatorHeaders: [(name: String, description: String, schema: JSONValue)] = [
        ("ETag", "A strong entity tag; differs between the identity and gzip bodies.", ["type": "string"]),
        ("Cache-Control", "How long the body may be reused.", ["type": "string"]),
    ]

    static func sequenceOperations(_ limits: SpoutConfiguration.Sequences) -> [APIOperation] {
        let factorialStart = min(SequenceKind.factorial.maxStart, limits.maxStart)
        return [
            APIOperation(
                "GET",
                "/sequences",
                id: "listSequences",
                tag: "sequences",
                summary: "The sequences",
                description: "Each sequence with a one-line description, its path and its largest `start`.",
                responses: [
                    .json(200, "The sequences and the formats they come in.", reference("SequenceList")),
                    .problem(400, .invalidParameter),
                ]
            ),
            APIOperation(
                "GET",
                "/sequences/{name}",
                id: "getSequence",
                tag: "sequences",
                summary: "A sequence as SSE, NDJSON or JSON",
                description: """
                    The format is `format` if given, else the best match of `Accept` (q-values honoured; \
                    `*/*` and no Accept get SSE). SSE: `retry:`, then `id: <index>` / `data: <value>` per \
                    element, and for a finite stream `event: end` / `data: {"reason":"completed"}`. NDJSON: \
                    `{"index":5,"value":"5"}` per line. JSON: one document; `count` is then required and \
                    `interval` refused. Values are decimal strings. A JSON document of fixed `start` and \
                    `count` never changes: `Cache-Control: max-age=31536000, immutable` with a strong \
                    ETag. Streams are paced by the reader, or by `interval` (the first element at once, then \
                    one per interval). `start` for factorial is at most \(factorialStart).
                    """,
                parameters: [
                    .path(
                        "name",
                        "The sequence.",
                        [
                            "type": "string", "enum": .array(SequenceKind.allCases.map { .string($0.rawValue) }),
                        ]
                    ),
                    .query(
                        "count",
                        "How many elements; omit for an endless stream (JSON requires it).",
                        ["type": "integer", "minimum": 0, "maximum": .integer(limits.maxCount)]
                    ),
                    .query(
                        "start",
                        "Index of the first element (factorial: at most \(factorialStart)).",
                        ["type": "integer", "minimum": 0, "maximum": .integer(limits.maxStart), "default": 0]
                    ),
                    .query(
                        "interval",
                        "Milliseconds between elements of a stream (not for JSON).",
                        ["type": "integer", "minimum": 1, "maximum": .integer(limits.maxIntervalMilliseconds)]
                    ),
                    .query("format", "The format; wins over Accept.", formats),
                    lastEventID,
                    ifNoneMatch,
                ],
                responses: [
                    APIResponse(
                        200,
                        "The elements, in the negotiated format.",
                        content: [
                            // JSON first: generated clients take the first media type as the one they decode.
                            ("application/json", reference("SequenceDocument")),
                            (
                                "text/event-stream",
                                serverSentEvent(
                                    "Events: `message` (id = the element's index), then for a finite stream `end` "
                                        + "(data {\"reason\":\"completed\"}; on shutdown \"shutdown\").",
                                    data: "A `message`'s data is the element, decimal digits."
                                )
                            ),
                            (
                                "application/x-ndjson",
                                ndjsonLine(
                                    #"{"index":5,"value":"5"} per element; the last line is {"end":{"reason":…}}."#
                                )
                            ),
                        ],
                        headers: validatorHeaders
                    ),
                    APIResponse(204, "Last-Event-ID is at or past the end of this finite stream."),
                    notModified,
                    .problem(400, .invalidParameter),
                    .problem(404, .notFound),
                    .problem(406, .notAcceptable),
                ]
            ),
        ]
    }

    static let upstreamFailures: [APIResponse] = [
        .problem(502, .upstreamFailed),
        .problem(503, .upstreamUnavailable),
        .problem(504, .upstreamTimeout),
    ]

    /// What a JSON route on one upstream item (an article, a user) answers besides its `200`.
    static let upstreamItemFailures: [APIResponse] =
        [.problem(400, .invalidParameter), .problem(404, .notFound), .problem(406, .notAcceptable)] + upstreamFailures

    static let upstreamOperations: [APIOperation] = [
        APIOperation(
            "GET",
            "/articles",
            id: "listArticles",
            tag: "articles",
            summary: "Articles from the upstream API",
            description:
                "From the upstream's `GET /posts`, cached for `upstream.cacheTTLSeconds` (and so is the answer).",
            parameters: [.query("userId", "Only this user's articles.", positiveInteger)],
            responses: [
                .json(200, "The articles.", reference("ArticleList")),
                .problem(400, .invalidParameter),
                .problem(406, .notAcceptable),
            ] + upstreamFailures
        ),
        APIOperation(
            "GET",
            "/articles/stream",
            id: "streamArticles",
            tag: "articles",
            summary: "Articles as a stream",
            description: """
                One event per article, SSE (default) or NDJSON; upstream pages are fetched only as the client \
                reads. `id:` is the article's position, so Last-Event-ID resumes. A failure after the head is an \
                `event: error` (NDJSON: an `{"error":…}` line).
                """,
            parameters: [
                .query("userId", "Only this user's articles.", positiveInteger),
                .query(
                    "count",
                    "At most this many articles.",
                    ["type": "integer", "minimum": 0, "maximum": 1_000_000_000]
                ),
                .query(
                    "format",
                    "`sse` or `ndjson`; wins over Accept.",
                    ["type": "string", "enum": ["sse", "ndjson"]]
                ),
                APIParameter.header(
                    "Last-Event-ID",
                    "SSE only: the position of the last article received; the stream resumes after it.",
                    ["type": "string", "pattern": "^[0-9]{1,9}$"]
                ),
            ],
            responses: [
                APIResponse(
                    200,
                    "The articles.",
                    content: [
                        (
                            "text/event-stream",
                            serverSentEvent(
                                "Events: `message` (id = the article's position), then `end`, or `error` on failure.",
                                data: "A `message`'s data is the article as JSON."
                            )
                        ),
                        (
                            "application/x-ndjson",
                            ndjsonLine(
                                #"One article per line, then {"end":{"reason":…}}; a failure is an {"error":…} line."#
                            )
                        ),
                    ]
                ),
                APIResponse(204, "Last-Event-ID is at or past `count`."),
                .problem(400, .invalidParameter),
                .problem(406, .notAcceptable),
            ]
        ),
        APIOperation(
            "GET",
            "/articles/{id}",
            id: "getArticle",
            tag: "articles",
            summary: "One article",
            parameters: [.path("id", "The article's id.", positiveIdentifier)],
            responses: [
                .json(200, "The article.", reference("Article"))
            ] + upstreamItemFailures
        ),
        APIOperation(
            "GET",
            "/users/{id}/profile",
            id: "getProfile",
            tag: "articles",
            summary: "A user and their articles",
            description: "Two parallel upstream calls joined with `zip`.",
            parameters: [.path("id", "The user's id.", positiveIdentifier)],
            responses: [
                .json(200, "The user and their articles.", reference("Profile"))
            ] + upstreamItemFailures
        ),
        APIOperation(
            "GET",
            "/dashboard/{userId}",
            id: "getDashboard",
            tag: "articles",
            summary: "A user's dashboard",
            description: """
                User, latest articles and open todos from three parallel calls; a failed part is `null` with an \
                entry in `errors`. 502 (504 if all timed out) only when all three fail.
                """,
            parameters: [.path("userId", "The user's id.", positiveIdentifier)],
            responses: [
                .json(200, "The dashboard, possibly partial.", reference("Dashboard"))
            ] + upstreamItemFailures
        ),
        APIOperation(
            "GET",
            "/workflow/{userId}",
            id: "runWorkflow",
            tag: "articles",
            summary: "A four-step upstream pipeline",
            description: """
                user → posts, todos and albums in parallel → comments of the latest post → summary. SSE and \
                NDJSON: one `step` event per step, then `summary`; a failing step ends the stream with an \
                `error` event. JSON: the summary alone.
                """,
            parameters: [
                .path("userId", "The user's id.", positiveIdentifier),
                .query("format", "The format; wins over Accept.", formats),
                APIParameter.header(
                    "Last-Event-ID",
                    """
                    SSE only: the id of the last event received (steps are 1 to 4, the summary 5). After the \
                    summary the answer is 204, which stops EventSource's reconnects; mid-workflow the workflow \
                    runs again and the events up to that id are not sent again.
                    """,
                    ["type": "string", "pattern": "^[0-9]{1,10}$"]
                ),
            ],
            responses: [
                APIResponse(
                    200,
                    "The steps and the summary, or the summary alone.",
                    content: [
                        // JSON first: generated clients take the first media type as the one they decode.
                        ("application/json", reference("WorkflowSummary")),
                        (
                            "text/event-stream",
                            serverSentEvent(
                                "Events: `step` per step (ids 1 to 4), then `summary` (id 5) and `end`; `error` when "
                                    + "a step fails.",
                                data: "JSON: a step's name and duration, or the summary."
                            )
                        ),
                        (
                            "application/x-ndjson",
                            ndjsonLine(#"One object per step, then the summary, then {"end":{"reason":"completed"}}."#)
                        ),
                    ]
                ),
                APIResponse(204, "SSE with a Last-Event-ID at or past the summary's id: nothing more to send."),
            ] + upstreamItemFailures
        ),
    ]

    /// The demo upstream, served only while no upstream is configured (otherwise every path is a 404 problem).
    static let demoOperations: [APIOperation] = {
        let paging: [APIParameter] = [
            .query("_page", "Page number, from 1.", ["type": "integer", "minimum": 1, "maximum": .integer(Int.max)]),
            .query(
                "_limit",
                "Records per page (10 when only `_page` is given).",
                ["type": "integer", "minimum": 0, "maximum": .integer(Int.max)]
            ),
        ]
        // As JSONPlaceholder reads it: a decimal id; anything else names no record (404 `{}`, or `[]` below it).
        let demoIdentifier: JSONValue = ["type": "string", "description": "A record's decimal id."]
        let totalCount: [(name: String, description: String, schema: JSONValue)] = [
            (
                "X-Total-Count", "The size of the whole list, when it was paged.",
                ["type": "string", "pattern": "^[0-9]+$"]
            )
        ]
        let noDemo = APIResponse.problem(404, .notFound)
        func list(_ path: String, _ id: String, _ summary: String, _ item: String, userId meaning: String? = nil)
            -> APIOperation
        {
            let userId: [APIParameter] =
                meaning.map { [.query("userId", $0, ["type": "integer", "minimum": 0, "maximum": .integer(Int.max)])] }
                ?? []
            let pathIdentifier: [APIParameter] =
                path.contains("{id}") ? [.path("id", "The record's id.", demoIdentifier)] : []
            return APIOperation(
                "GET",
                path,
                id: id,
                tag: "demo",
                summary: summary,
                parameters: pathIdentifier + userId + paging,
                responses: [
                    .json(
                        200,
                        "The records (`[]` for an unknown parent).",
                        ["type": "array", "items": reference(item)],
                        headers: totalCount
                    ),
                    .problem(400, .invalidParameter),
                    .problem(404, .notFound),
                ]
            )
        }
        func item(_ path: String, _ id: String, _ summary: String, _ item: String) -> APIOperation {
            APIOperation(
                "GET",
                path,
                id: id,
                tag: "demo",
                summary: summary,
                parameters: [.path("id", "The record's id.", demoIdentifier)],
                responses: [.json(200, "The record.", reference(item)), .problem(400, .invalidParameter), noDemo]
            )
        }
        return [
            list(
                "/demo/users",
                "demoListUsers",
                "Demo users",
                "User",
                userId: "Accepted, as on /demo/posts; users are not filtered."
            ),
            item("/demo/users/{id}", "demoGetUser", "A demo user", "User"),
            list("/demo/users/{id}/posts", "demoListUserPosts", "A demo user's posts", "Article"),
            list("/demo/users/{id}/todos", "demoListUserTodos", "A demo user's todos", "Todo"),
            list("/demo/users/{id}/albums", "demoListUserAlbums", "A demo user's albums", "Album"),
            list("/demo/posts", "demoListPosts", "Demo posts", "Article", userId: "Only this user's posts."),
            item("/demo/posts/{id}", "demoGetPost", "A demo post", "Article"),
            list("/demo/posts/{id}/comments", "demoListComments", "A demo post's comments", "Comment"),
        ]
    }()

    // MARK: - Channels

    /// The bearer-token schemes of the channel routes (`#/components/securitySchemes/…`). An operation lists
    /// one in its `security` only when tokens of that kind are configured; without publish tokens, publishing
    /// (and the channel list) is open to loopback clients alone, and without subscribe tokens subscribing is
    /// open to all.
    /// The schemes of `configuration`: ``securitySchemes``, and `jwtCookie` when `channels.jwt.cookieName` is set
    /// (an OpenAPI cookie scheme must name its cookie).
    static func securitySchemes(_ configuration: SpoutConfiguration) -> [(String, JSONValue)] {
        let cookie = configuration.channels.jwt.cookieName
        guard !cookie.isEmpty else { return securitySchemes }
        return securitySchemes + [
            (
                "jwtCookie",
                [
                    "type": "apiKey",
                    "in": "cookie",
                    "name": .string(cookie),
                    "description": """
                    The JWT of a subscription in the cookie channels.jwt.cookieName, for EventSource with \
                    `withCredentials: true` (cross-origin, the page's origin must be listed in \
                    cors.allowedOrigins, which then answers with Access-Control-Allow-Credentials). Publishing \
                    never reads it.
                    """,
                ]
            )
        ]
    }

    /// The `security` alternatives of the subscription routes under `configuration`: a subscribe token (header or
    /// query), a JWT (header, query or cookie); `nil` when subscribing is open to all.
    static func subscribeSecurity(_ configuration: SpoutConfiguration) -> [[String]]? {
        let channels = configuration.channels
        let jwt: [[String]] =
            channels.jwt.isEnabled ? [["jwt"]] + (channels.jwt.cookieName.isEmpty ? [] : [["jwtCookie"]]) : []
        let schemes =
            (channels.subscribeTokens.isEmpty ? [] : [["subscribeToken"]]) + jwt
            + (channels.subscribeTokens.isEmpty && jwt.isEmpty ? [] : [["subscribeQueryToken"]])
        return schemes.isEmpty ? nil : schemes
    }

    /// `429` when the client has `channels.maxSubscriptionsPerSubject` streams open.
    static func subscriptionCap(_ configuration: SpoutConfiguration) -> [APIResponse] {
        let most = configuration.channels.maxSubscriptionsPerSubject
        let cap = most > 0 ? "\(most) here" : "not set here"
        let retryAfter = ChannelRoutes.subscriptionRetryAfter(heartbeatSeconds: configuration.sse.heartbeatSeconds)
        return [
            APIResponse(
                429,
                """
                A problem: `\(ProblemType.tooManySubscriptions.uri)` (the client, a JWT's sub or its address, \
                already has channels.maxSubscriptionsPerSubject streams open (\(cap)); no stream was opened).
                """,
                content: [(Problem.mediaType, problemSchema(.tooManySubscriptions))],
                headers: [
                    (
                        "Retry-After",
                        """
                        Seconds to wait before opening a stream again: sse.heartbeatSeconds rounded up \
                        (\(retryAfter) here), the longest a stream of a client that went away keeps its place.
                        """,
                        ["type": "string", "pattern": "^[0-9]+$"]
                    )
                ],
                problemTypes: [.tooManySubscriptions]
            )
        ]
    }

    static let securitySchemes: [(String, JSONValue)] = [
        (
            "publishToken",
            [
                "type": "http",
                "scheme": "bearer",
                "description": """
                One of channels.publishTokens (SPOUT_CHANNELS_PUBLISH_TOKENS), compared in constant time. \
                Publishing and GET /channels need it when any is configured; with none configured only \
                loopback clients may publish or list (403 for others).
                """,
            ]
        ),
        (
            "subscribeToken",
            [
                "type": "http",
                "scheme": "bearer",
                "description": """
                One of channels.subscribeTokens (SPOUT_CHANNELS_SUBSCRIBE_TOKENS), needed to subscribe and \
                to read the latest event when any is configured. EventSource, which cannot set headers, \
                sends it as the `token` query parameter instead (subscribeQueryToken).
                """,
            ]
        ),
        (
            "subscribeQueryToken",
            [
                "type": "apiKey",
                "in": "query",
                "name": "token",
                "description": """
                A subscribe token as the `token` query parameter, for EventSource; `Authorization: Bearer` \
                wins when both are sent. The request log redacts it.
                """,
            ]
        ),
        (
            "jwt",
            [
                "type": "http",
                "scheme": "bearer",
                "bearerFormat": "JWT",
                "description": """
                A JWT (JWS compact) verified with a key of channels.jwt.jwksFile or jwksURL, whose `spout` claim \
                ({"publish": [patterns], "subscribe": [patterns]}; a pattern is a channel name or a prefix ending \
                in *) grants channels one by one (403 channel-not-granted otherwise). A subscription may send it \
                as `?token=` or in the cookie channels.jwt.cookieName instead. See docs/IDENTITY.md.
                """,
            ]
        ),
    ]

    /// `{name}` of the channel routes.
    static let channelName = APIParameter.path(
        "name",
        "The channel: 1–128 characters of A–Z a–z 0–9 . _ ~ -, but not `.` or `..` (anything else is a 400 problem).",
        ["type": "string", "pattern": "^(?!\\.{1,2}$)[A-Za-z0-9._~-]{1,128}$", "minLength": 1, "maxLength": 128]
    )

    /// `401` with the challenge, and `403`, for the routes guarded by `scheme`.
    static func channelAuthFailures(_ when: String) -> [APIResponse] {
        let unauthorized: [ProblemType] = [
            .unauthorized, .tokenInvalid, .tokenExpired, .tokenSignatureInvalid, .tokenKeyUnknown,
        ]
        return [
            APIResponse(
                401,
                "A problem: `\(ProblemType.unauthorized.uri)` (no token was sent; \(when)), or, with "
                    + "channels.jwt on, a token-* problem saying why the JWT was refused.",
                content: [(Problem.mediaType, problemSchema(unauthorized))],
                headers: [("WWW-Authenticate", #"`Bearer realm="spout"`."#, ["type": "string"])],
                problemTypes: unauthorized
            ),
            .problem(403, .forbidden, .channelNotGranted),
        ]
    }

    /// `503` when the broker is at `channels.maxChannels` (or the channel at its most subscribers).
    static func channelCapacity(_ what: String) -> APIResponse {
        APIResponse(
            503,
            "A problem: `\(ProblemType.unavailable.uri)` (\(what)); retry after Retry-After seconds.",
            content: [(Problem.mediaType, problemSchema(.unavailable))],
            headers: [("Retry-After", "Seconds to wait before retrying.", ["type": "string", "pattern": "^[0-9]+$"])],
            problemTypes: [.unavailable]
        )
    }

    static func channelOperations(_ configuration: SpoutConfiguration) -> [APIOperation] {
        let channels = configuration.channels
        let jwt: [[String]] = channels.jwt.isEnabled ? [["jwt"]] : []
        let publishSchemes = (channels.publishTokens.isEmpty ? [] : [["publishToken"]]) + jwt
        let publishSecurity: [[String]]? = publishSchemes.isEmpty ? nil : publishSchemes
        let subscribeSecurity = subscribeSecurity(configuration)
        let publishRule =
            channels.publishTokens.isEmpty
            ? "No publish token is configured here, so only loopback clients may call it (403 for others)."
                + " A repeated Authorization header is a 400."
            : "It needs `Authorization: Bearer <token>` with one of channels.publishTokens, sent once (a repeated "
                + "Authorization header is a 400)."
        let subscribeRule =
            channels.subscribeTokens.isEmpty
            ? "No subscribe token is configured here: anyone may subscribe. A repeated Authorization header is a 400."
            : "It needs one of channels.subscribeTokens, as `Authorization: Bearer <token>` (sent once: a repeated "
                + "Authorization header is a 400) or `?token=`."
        let token = APIParameter.query(
            "token",
            """
            A subscribe token, for EventSource, which cannot set headers (`Authorization: Bearer` wins when both \
            are sent); ignored when no channels.subscribeTokens are configured. The request log redacts it.
            """,
            ["type": "string"]
        )
        let seconds = channels.historySeconds
        let age = seconds == seconds.rounded() && seconds < 1e9 ? String(Int(seconds)) : String(seconds)
        let historyLimits = """
            The history keeps the newest \(channels.historyEvents) events, \(channels.historyBytes) bytes and \
            \(age) s per channel.
            """
        let overflow =
            channels.overflow == .dropOldest
            ? """
            A subscriber that falls more than \(channels.subscriberBufferEvents) events or \
            \(channels.subscriberBufferBytes) bytes behind loses its oldest waiting events and gets an `event: gap` \
            before the next one it receives (policy drop-oldest).
            """
            : """
            A subscriber that falls more than \(channels.subscriberBufferEvents) events or \
            \(channels.subscriberBufferBytes) bytes behind is ended with `event: end` \
            `{"reason":"overflow"}` (policy disconnect); it resumes with Last-Event-ID, from the history.
            """
        return [
            APIOperation(
                "GET",
                "/channels",
                id: "listChannels",
                tag: "channels",
                summary: "The channels, for operators",
                description: """
                    Every channel that exists (created by a publish or a subscription, dropped when it has no \
                    subscriber and an empty history), by name, with its subscribers, last id and history. \
                    \(publishRule)
                    """,
                security: publishSecurity,
                responses: [
                    .json(200, "The channels.", reference("ChannelList")),
                    .problem(400, .invalidParameter),
                ] + channelAuthFailures("publish tokens are configured")
            ),
            APIOperation(
                "GET",
                "/channels/{name}",
                id: "subscribeChannel",
                tag: "channels",
                summary: "A channel's events, live, as SSE or NDJSON",
                description: """
                    The format is `format` if given, else the best match of `Accept` (SSE for `*/*` and no \
                    Accept). The stream never ends by itself: it carries the events published from now on, \
                    each once and in id order, `: keep-alive` comments while idle (SSE), and ends only when \
                    the server shuts down or the subscriber falls behind. With Last-Event-ID (or \
                    `lastEventId`, for EventSource's first request) it first replays what the history holds \
                    after that id, with no gap and no duplicate against the live part. An id the history no \
                    longer reaches (`history-truncated`) or does not know (`unknown-id`: an earlier run of the \
                    server, or not an id) first gets an `event: reset`, then the whole history. \
                    \(historyLimits) \(overflow) At most \(channels.maxSubscribersPerChannel) subscribers per \
                    channel and \(channels.maxChannels) channels (503 beyond). \(subscribeRule)
                    """,
                parameters: [
                    channelName,
                    APIParameter.header(
                        "Last-Event-ID",
                        """
                        The id of the last event received (EventSource sends it when it reconnects); the \
                        stream replays the history after it. Wins over `lastEventId`.
                        """,
                        ["type": "string"]
                    ),
                    .query(
                        "lastEventId",
                        "As the Last-Event-ID header, for a first request that cannot set it (EventSource).",
                        ["type": "string"]
                    ),
                    token,
                ] + streamOptionParameters,
                security: subscribeSecurity,
                responses: [
                    APIResponse(
                        200,
                        "The channel's events, in the negotiated format, until the server ends the stream.",
                        content: [
                            (
                                "text/event-stream",
                                serverSentEvent(
                                    """
                                    Events: each published event with `id: <id>` (ids are opaque, strictly \
                                    increasing per channel, and change with each run of the server), `event:` \
                                    its type when the publisher gave one (else `message`) and its data as \
                                    compact JSON on one `data:` line; `reset` (no id; data \
                                    {"reason":"history-truncated"|"unknown-id","oldest":"<id>"|null}) before a \
                                    replay of the whole history when the client missed events; `gap` (no id; \
                                    data {"missed":<n>,"after":"<id>"|null}) when events were dropped for this \
                                    subscriber (policy drop-oldest); `end` (data {"reason":"overflow"} or \
                                    {"reason":"shutdown"}) as the last event, after which the client resumes \
                                    with Last-Event-ID.
                                    """,
                                    data: "The event's data, compact JSON; a control event's JSON object."
                                )
                            ),
                            (
                                "application/x-ndjson",
                                ndjsonLine(
                                    """
                                    {"id":"<id>","event":"<type>","data":<JSON>} per event (`event` only when \
                                    given); {"reset":{"reason":…,"oldest":…}} and {"gap":{"missed":…,"after":…}} \
                                    as for SSE; {"end":{"reason":"overflow"|"shutdown"}} as the last line.
                                    """
                                )
                            ),
                        ]
                    ),
                    .problem(400, .invalidParameter),
                ] + channelAuthFailures("subscribe tokens are configured") + [
                    .problem(406, .notAcceptable),
                    channelCapacity("too many channels, or too many subscribers on this one"),
                ] + subscriptionCap(configuration)
            ),
            APIOperation(
                "GET",
                "/channels/{name}/latest",
                id: "getChannelLatest",
                tag: "channels",
                summary: "A channel's newest event",
                description: """
                    The newest event as the same JSON object an NDJSON subscriber gets; 404 when the channel \
                    has none (never published to, or its history expired and it was dropped). \(subscribeRule)
                    """,
                parameters: [channelName, token],
                security: subscribeSecurity,
                responses: [
                    .json(200, "The newest event.", reference("ChannelEvent")),
                    .problem(400, .invalidParameter),
                ] + channelAuthFailures("subscribe tokens are configured") + [
                    .problem(404, .notFound)
                ]
            ),
            APIOperation(
                "POST",
                "/channels/{name}/events",
                id: "publishChannelEvents",
                tag: "channels",
                summary: "Publish events to a channel",
                description: """
                    One event `{"data": <any JSON>, "event": "<type>"}` or a non-empty array of them (a batch: \
                    all or nothing, in order, with consecutive ids), as `application/json`; the channel is \
                    created if need be. Each `data` goes out as its compact JSON text on one `data:` line, at \
                    most \(channels.maxEventBytes) bytes (channels.maxEventBytes; 413 beyond). The body is read \
                    strictly (RFC 8259, nesting at most \(ChannelPublishBody.maxDepth) deep, no other members, \
                    none twice); a refused body publishes nothing. \(publishRule)

                    `202` means the events are stored (over Redis: Redis confirmed them) and will reach every \
                    subscriber. `503` `unavailable` means nothing was stored; `503` `outcome-unknown` means Redis \
                    took the publish but did not confirm it, so it may have been stored. With an \
                    `Idempotency-Key`, a retry of either is safe: a key seen on this channel within \
                    \(Int(channels.idempotencyWindowSeconds)) s (channels.idempotencyWindowSeconds) answers the \
                    first publish's ids again and publishes nothing.
                    """,
                parameters: [
                    channelName,
                    APIParameter.header(
                        "Idempotency-Key",
                        """
                        draft-ietf-httpapi-idempotency-key-header: a Structured Fields string naming this publish, \
                        e.g. `"8e03978e-40d5-43e8-bc93-6894a57f9324"` (a bare token of the same characters is \
                        taken as the same key); 1–\(ChannelIdempotency.maxKeyBytes) visible ASCII characters, \
                        once (400 when malformed or repeated). The same key on this channel with the same body \
                        within channels.idempotencyWindowSeconds gets the first 202 again, with the same ids, and \
                        publishes nothing; with another body, 422; while its first request is still being \
                        answered on this instance, 409. Over Redis the key is kept in Redis, stored atomically \
                        with the events, so every replica (and one started later) honours it.
                        """,
                        [
                            "type": "string", "minLength": 1,
                            "maxLength": .integer(2 * ChannelIdempotency.maxKeyBytes + 2),
                            // Exactly what ChannelIdempotency.key(in:) takes (see keyPattern).
                            "pattern": .string(ChannelIdempotency.keyPattern),
                        ]
                    ),
                ],
                requestBody: APIRequestBody(
                    """
                    The event or events, at most \(configuration.limits.maxBodyBytes) bytes (limits.maxBodyBytes; \
                    the server refuses a larger body with a 413 problem before reading it, and closes the \
                    connection).
                    """,
                    content: [("application/json", reference("ChannelPublishBody"))]
                ),
                security: publishSecurity,
                responses: [
                    channels.publishRatePerMinute > 0
                        ? APIResponse(
                            202,
                            "Published: the events' ids, in order; the client's publish quota in RateLimit.",
                            content: [("application/json", reference("ChannelPublished"))],
                            headers: [
                                (
                                    "RateLimit-Policy", "The quota: `\"publish\";q=<per minute>;w=60`.",
                                    ["type": "string"]
                                ),
                                (
                                    "RateLimit",
                                    "What is left: `\"publish\";r=<publishes left>;t=<seconds until the bucket is full>`.",
                                    ["type": "string"]
                                ),
                            ]
                        )
                        : .json(202, "Published: the events' ids, in order.", reference("ChannelPublished")),
                    .problem(400, .invalidParameter, .invalidBody),
                ] + channelAuthFailures("publish tokens are configured") + [
                    APIResponse(
                        413,
                        """
                        A problem: `\(ProblemType.contentTooLarge.uri)`: an event's data is larger than \
                        channels.maxEventBytes, or the body is larger than limits.maxBodyBytes (then the server \
                        answers before reading it, and closes the connection).
                        """,
                        content: [(Problem.mediaType, problemSchema(.contentTooLarge))],
                        problemTypes: [.contentTooLarge]
                    ),
                    .problem(415, .unsupportedMediaType),
                    .problem(409, .idempotencyKeyInFlight),
                    .problem(422, .idempotencyKeyReused),
                    APIResponse(
                        429,
                        """
                        A problem: `\(ProblemType.rateLimited.uri)` (the client published past \
                        channels.publishBurst or channels.publishRatePerMinute; nothing was published).
                        """,
                        content: [(Problem.mediaType, problemSchema(.rateLimited))],
                        headers: [
                            ("Retry-After", "Seconds to wait.", ["type": "string", "pattern": "^[0-9]+$"]),
                            ("RateLimit-Policy", "The quota: `\"publish\";q=<per minute>;w=60`.", ["type": "string"]),
                            ("RateLimit", "What is left: `\"publish\";r=0;t=<seconds>`.", ["type": "string"]),
                        ],
                        problemTypes: [.rateLimited]
                    ),
                    APIResponse(
                        503,
                        """
                        A problem, with Retry-After: `\(ProblemType.unavailable.uri)` (nothing was stored: too many \
                        channels or Idempotency-Keys, or Redis unreachable) or `\(ProblemType.outcomeUnknown.uri)` \
                        (Redis took the publish but did not confirm it: it may have been stored; retry with the \
                        same Idempotency-Key).
                        """,
                        content: [(Problem.mediaType, problemSchema([.unavailable, .outcomeUnknown]))],
                        headers: [
                            (
                                "Retry-After", "Seconds to wait before retrying.",
                                ["type": "string", "pattern": "^[0-9]+$"]
                            )
                        ],
                        problemTypes: [.unavailable, .outcomeUnknown]
                    ),
                ]
            ),
        ]
    }

    // MARK: - Schemas

    /// The shared schemas (`#/components/schemas/…`).
    static var schemas: [(String, JSONValue)] {
        let integer: JSONValue = ["type": "integer"]
        let string: JSONValue = ["type": "string"]
        func object(_ properties: [(String, JSONValue)], required: [String]) -> JSONValue {
            ["type": "object", "properties": .object(properties), "required": .array(required.map { .string($0) })]
        }
        func nullable(_ schema: JSONValue) -> JSONValue { ["anyOf": [schema, ["type": "null"]]] }
        let problemMembers: [(String, JSONValue)] =
            [
                ("type", ["type": "string", "enum": .array(ProblemType.all.map { .string($0.uri) })]),
                ("title", string),
                ("status", ["type": "integer", "minimum": 400, "maximum": 599]),
                ("detail", string),
                ("instance", string),
            ]
            + uniqueMembers.map { member in
                (member.name, ["type": .string(member.jsonType), "description": .string(member.meaning)])
            }
        return [
            ("Health", object([("status", ["const": "ok"])], required: ["status"])),
            (
                "Ready",
                object(
                    [
                        ("ready", ["type": "boolean"]),
                        ("reason", ["type": "string", "enum": ["starting", "draining", "redis"]]),
                        // With channels over Redis: its connection's state ("connected", "reconnecting (…)", …).
                        ("redis", ["type": "string"]),
                    ],
                    required: ["ready"]
                )
            ),
            (
                "SequenceList",
                object(
                    [
                        (
                            "sequences",
                            [
                                "type": "array",
                                "items": object(
                                    [
                                        ("name", string), ("description", string), ("path", string),
                                        ("maxStart", integer),
                                    ],
                                    required: ["name", "description", "path", "maxStart"]
                                ),
                            ]
                        ),
                        ("formats", ["type": "array", "items": formats]),
                    ],
                    required: ["sequences", "formats"]
                )
            ),
            (
                "SequenceDocument",
                object(
                    [
                        (
                            "sequence",
                            ["type": "string", "enum": .array(SequenceKind.allCases.map { .string($0.rawValue) })]
                        ),
                        ("start", ["type": "integer", "minimum": 0]),
                        ("count", ["type": "integer", "minimum": 0]),
                        ("values", ["type": "array", "items": ["type": "string", "pattern": "^[0-9]+$"]]),
                    ],
                    required: ["sequence", "start", "count", "values"]
                )
            ),
            (
                "Article",
                object(
                    [("userId", integer), ("id", integer), ("title", string), ("body", string)],
                    required: ["userId", "id", "title", "body"]
                )
            ),
            (
                "ArticleList",
                object([("articles", ["type": "array", "items": reference("Article")])], required: ["articles"])
            ),
            (
                "User",
                object(
                    [
                        ("id", integer), ("name", string), ("username", string), ("email", string), ("phone", string),
                        ("website", string),
                    ],
                    required: ["id", "name", "username", "email"]
                )
            ),
            (
                "Todo",
                object(
                    [("userId", integer), ("id", integer), ("title", string), ("completed", ["type": "boolean"])],
                    required: ["userId", "id", "title", "completed"]
                )
            ),
            (
                "Album",
                object([("userId", integer), ("id", integer), ("title", string)], required: ["userId", "id", "title"])
            ),
            (
                "Comment",
                object(
                    [("postId", integer), ("id", integer), ("name", string), ("email", string), ("body", string)],
                    required: ["postId", "id", "name", "email", "body"]
                )
            ),
            (
                "Profile",
                object(
                    [("user", reference("User")), ("posts", ["type": "array", "items": reference("Article")])],
                    required: ["user", "posts"]
                )
            ),
            (
                "Dashboard",
                object(
                    [
                        ("userId", integer),
                        ("user", nullable(reference("User"))),
                        ("latestPosts", nullable(["type": "array", "items": reference("Article")])),
                        ("openTodos", nullable(["type": "array", "items": reference("Todo")])),
                        ("errors", ["type": "array", "items": reference("Problem")]),
                    ],
                    required: ["userId", "user", "latestPosts", "openTodos", "errors"]
                )
            ),
            (
                "WorkflowSummary",
                object(
                    [
                        ("user", reference("User")),
                        ("posts", integer),
                        ("albums", integer),
                        (
                            "todos",
                            object([("open", integer), ("completed", integer)], required: ["open", "completed"])
                        ),
                        ("latestPost", nullable(["type": "object"])),
                        ("steps", ["type": "array", "items": ["type": "object"]]),
                        ("durationMs", ["type": "number"]),
                    ],
                    required: ["user"]
                )
            ),
            (
                "ChannelPublication",
                [
                    "type": "object",
                    "description": "One event as a publisher sends it.",
                    "properties": [
                        "data": [
                            "description": """
                            Any JSON value (object, array, string, number, true, false, null); it goes out as \
                            its compact JSON text.
                            """
                        ],
                        "event": [
                            "type": "string",
                            "description": .string(
                                """
                                The SSE event type (`event:`); without it EventSource dispatches a `message`. 1 to \
                                \(ChannelPublishBody.maxTypeCharacters) characters, no control characters, and not \
                                one of the stream's own frames (`reset`, `gap`, `end`, `error`).
                                """
                            ),
                            "minLength": 1,
                            "maxLength": .integer(ChannelPublishBody.maxTypeCharacters),
                            "pattern": "^[^\\u0000-\\u001F\\u007F]+$",
                            "not": ["enum": ["reset", "gap", "end", "error"]],
                        ],
                    ],
                    "required": ["data"],
                    "additionalProperties": false,
                ]
            ),
            (
                "ChannelPublishBody",
                [
                    "description": "One event, or a non-empty array of events published together, in order.",
                    "oneOf": [
                        reference("ChannelPublication"),
                        ["type": "array", "minItems": 1, "items": reference("ChannelPublication")],
                    ],
                ]
            ),
            (
                "ChannelPublished",
                object(
                    [("channel", string), ("ids", ["type": "array", "minItems": 1, "items": string])],
                    required: ["channel", "ids"]
                )
            ),
            (
                "ChannelEvent",
                [
                    "type": "object",
                    "description": "A published event: its id, its type when the publisher gave one, its data.",
                    "properties": ["id": string, "event": string, "data": [:]],
                    "required": ["id", "data"],
                    "additionalProperties": false,
                ]
            ),
            (
                "ChannelList",
                object(
                    [
                        (
                            "channels",
                            [
                                "type": "array",
                                "items": object(
                                    [
                                        ("name", string),
                                        ("subscribers", ["type": "integer", "minimum": 0]),
                                        ("lastId", nullable(string)),
                                        ("historyEvents", ["type": "integer", "minimum": 0]),
                                        ("historyBytes", ["type": "integer", "minimum": 0]),
                                    ],
                                    required: ["name", "subscribers", "lastId", "historyEvents", "historyBytes"]
                                ),
                            ]
                        )
                    ],
                    required: ["channels"]
                )
            ),
            (
                "Problem",
                [
                    "type": "object",
                    "description": "RFC 9457. `type` resolves to a page that explains it (GET /problems/{type}).",
                    "properties": .object(problemMembers),
                    "required": ["type", "title", "status", "detail"],
                ]
            ),
        ]
    }

    /// The extension members of every problem type, each name once.
    static var uniqueMembers: [ProblemType.Member] {
        var seen: Set<String> = []
        return ProblemType.all.flatMap(\.members).filter { seen.insert($0.name).inserted }
    }
}
