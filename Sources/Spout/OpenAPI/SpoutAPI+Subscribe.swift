extension SpoutAPI {
    /// `GET /subscribe`: many channels and patterns on one stream (``ChannelMultiRoutes``).
    static func multiChannelOperations(_ configuration: SpoutConfiguration) -> [APIOperation] {
        let channels = configuration.channels
        let subscribeSecurity = subscribeSecurity(configuration)
        let subscribeRule =
            channels.subscribeTokens.isEmpty
            ? "No subscribe token is configured here: anyone may subscribe. A repeated Authorization header is a 400."
            : "It needs one of channels.subscribeTokens, as `Authorization: Bearer <token>` (sent once: a repeated "
                + "Authorization header is a 400) or `?token=`."
        let most = channels.maxChannelsPerSubscription
        return [
            APIOperation(
                "GET",
                "/subscribe",
                id: "subscribeChannels",
                tag: "channels",
                summary: "Many channels' events on one stream, as SSE or NDJSON",
                description: """
                    Every `channel` parameter names a channel, or a pattern `prefix*` that follows every channel \
                    whose name starts with the prefix, those that exist and those created later (which start \
                    from their first event). At most \(most) channels and patterns \
                    (channels.maxChannelsPerSubscription; 400 beyond), and at most \(most) channels followed at \
                    once. Each event names its channel and carries, as its SSE `id:` (NDJSON `cursor`), the \
                    subscription's cursor: an opaque, URL-safe string of the position in every channel. Sent back \
                    as Last-Event-ID (or `lastEventId`) it resumes every channel with no gap and no duplicate; a \
                    channel it says nothing of starts from its first event; a cursor that is not one gets an \
                    `event: reset` (`unknown-id`) for each channel, then their whole history. \(subscribeRule)
                    """,
                parameters: [
                    APIParameter(
                        name: "channel",
                        location: .query,
                        description: """
                            A channel name (1–128 characters of A–Z a–z 0–9 . _ ~ -, not `.` or `..`) or a pattern \
                            (1–127 such characters, then `*`); repeat the parameter for more.
                            """,
                        required: true,
                        schema: [
                            "type": "array",
                            "minItems": 1,
                            "maxItems": .integer(most),
                            "items": [
                                "type": "string",
                                "pattern": "^((?!\\.{1,2}$)[A-Za-z0-9._~-]{1,128}|[A-Za-z0-9._~-]{1,127}\\*)$",
                                "minLength": 1,
                                "maxLength": 128,
                            ],
                        ]
                    ),
                    APIParameter.header(
                        "Last-Event-ID",
                        """
                        The cursor of the last event received (EventSource sends it when it reconnects). Wins over \
                        `lastEventId`.
                        """,
                        ["type": "string"]
                    ),
                    .query(
                        "lastEventId",
                        "As the Last-Event-ID header, for a first request that cannot set it (EventSource).",
                        ["type": "string"]
                    ),
                    .query(
                        "token",
                        """
                        A subscribe token, for EventSource, which cannot set headers (`Authorization: Bearer` wins \
                        when both are sent); ignored when no channels.subscribeTokens are configured.
                        """,
                        ["type": "string"]
                    ),
                ] + streamOptionParameters,
                security: subscribeSecurity,
                responses: [
                    APIResponse(
                        200,
                        "The channels' events, in the negotiated format, until the server ends the stream.",
                        content: [
                            (
                                "text/event-stream",
                                serverSentEvent(
                                    """
                                    Events: each published event with `id: <cursor>`, `event:` its type when \
                                    the publisher gave one (else `message`) and data \
                                    {"channel":"<name>","id":"<the event's id>","data":<JSON>}; `reset` (no id; \
                                    data {"channel":…,"reason":"history-truncated"|"unknown-id","oldest":…}) \
                                    before a replay of a channel's whole history; `gap` (no id; data \
                                    {"channel":…,"missed":<n>,"after":…}); `end` (data {"reason":"overflow"} or \
                                    {"reason":"shutdown"}) as the last event, for the whole stream.
                                    """,
                                    data: "A JSON object naming the channel."
                                )
                            ),
                            (
                                "application/x-ndjson",
                                ndjsonLine(
                                    """
                                    {"channel":"<name>","id":"<id>","cursor":"<cursor>","event":"<type>",\
                                    "data":<JSON>} per event (`event` only when given); \
                                    {"reset":{"channel":…,"reason":…,"oldest":…}} and \
                                    {"gap":{"channel":…,"missed":…,"after":…}} as for SSE; \
                                    {"end":{"reason":"overflow"|"shutdown"}} as the last line.
                                    """
                                )
                            ),
                        ]
                    ),
                    .problem(400, .invalidParameter),
                ] + channelAuthFailures("subscribe tokens are configured") + [
                    .problem(406, .notAcceptable),
                    channelCapacity("too many channels, or too many subscribers on one of them"),
                ] + subscriptionCap(configuration)
            ),
            APIOperation(
                "GET",
                "/channels/{name}/presence",
                id: "getChannelPresence",
                tag: "channels",
                summary: "Who is subscribed to a channel",
                description: """
                    The subscribers of the channel (over Redis: those of every live replica) and the names of those \
                    that gave one (`client`), each once, sorted; a channel nobody subscribes to has count 0. While \
                    Redis cannot be read the answer is still 200, with `partial: true`: what the replica that answers \
                    knows (its own subscribers, and the other replicas' as they last announced them to it, which may \
                    be out of date). \(subscribeRule)
                    """,
                parameters: [
                    channelName,
                    .query(
                        "token",
                        "A subscribe token (`Authorization: Bearer` wins when both are sent).",
                        ["type": "string"]
                    ),
                ],
                security: subscribeSecurity,
                responses: [
                    .json(
                        200,
                        "Who is here.",
                        [
                            "type": "object",
                            "required": ["channel", "count", "clients", "partial"],
                            "properties": [
                                "channel": ["type": "string"],
                                "count": ["type": "integer", "minimum": 0],
                                "clients": ["type": "array", "items": ["type": "string"]],
                                "partial": [
                                    "type": "boolean",
                                    "description":
                                        "true when Redis could not be read: this replica's view, not every replica's",
                                ],
                            ],
                            "additionalProperties": false,
                        ]
                    ),
                    .problem(400, .invalidParameter),
                ] + channelAuthFailures("subscribe tokens are configured")
            ),
        ]
    }

    /// The options every channel subscription takes, on `/channels/{name}` and `/subscribe`: the format, conflation
    /// and presence.
    static let streamOptionParameters: [APIParameter] = [
        .query(
            "format",
            "`sse` or `ndjson`; wins over Accept.",
            ["type": "string", "enum": ["sse", "ndjson"]]
        ),
        .query(
            "conflate",
            """
            `true`: while the reader is behind, only the newest waiting event of each `event` type is \
            kept; the ones it replaced count in the next `event: gap`.
            """,
            ["type": "boolean"]
        ),
        .query(
            "client",
            """
            The subscriber's name in the channel's presence (GET /channels/{name}/presence, `join` and \
            `leave` events): 1–64 characters of A–Z a–z 0–9 . _ ~ - @.
            """,
            ["type": "string", "pattern": "^[A-Za-z0-9._~@-]{1,64}$", "minLength": 1, "maxLength": 64]
        ),
        .query(
            "presence",
            """
            `true`: the stream also carries `event: join` and `event: leave` (no id; data \
            {"channel":…,"client":…}) when a named client's first subscription joins or its last leaves.
            """,
            ["type": "boolean"]
        ),
    ]
}
