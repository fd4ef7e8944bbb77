extension SpoutAPI {
    /// `GET /`, `GET /client/spout.js`, `GET /client/spout.d.ts` (``ClientRoutes``): files compiled into the binary,
    /// each with a strong `ETag` and `Cache-Control: no-cache`.
    static let clientOperations: [APIOperation] = [
        clientFile(
            "/",
            id: "getPage",
            summary: "A page that shows the service live",
            description: """
                Small and self-contained (no outside assets): the server's figures from /metrics, the channels \
                from GET /channels (which needs what that route needs: a publish token, entered on the page, or a \
                client on loopback), a live view of a channel with a publish form, and a sequence stream drawn as \
                it arrives. It uses only the public routes. Served with a Content-Security-Policy that allows its \
                own inline script and style by hash, and connections to this origin only.
                """,
            mediaType: "text/html; charset=utf-8"
        ),
        clientFile(
            "/client/spout.js",
            id: "getClientScript",
            summary: "The browser client (an ES module)",
            description: """
                `subscribe(channels, handler, options)`: many channels on one connection (GET /subscribe), \
                shared by every tab of the page's origin (Web Locks choose the tab that holds it, BroadcastChannel \
                hands its events to the others), resumed from the cursor on a reconnect and when the tab holding \
                it closes. No dependencies, no build step; see docs/CLIENT.md.
                """,
            mediaType: "text/javascript; charset=utf-8"
        ),
        clientFile(
            "/client/spout.d.ts",
            id: "getClientTypes",
            summary: "The browser client's TypeScript declarations",
            description: "The types of /client/spout.js: its options, and the events and frames a handler is given.",
            mediaType: "text/typescript; charset=utf-8"
        ),
    ]

    private static func clientFile(
        _ path: String,
        id: String,
        summary: String,
        description: String,
        mediaType: String
    ) -> APIOperation {
        APIOperation(
            "GET",
            path,
            id: id,
            tag: "client",
            summary: summary,
            description: description,
            parameters: [ifNoneMatch],
            responses: [
                APIResponse(200, "The file.", content: [(mediaType, ["type": "string"])], headers: validatorHeaders),
                notModified,
                .problem(400, .invalidParameter),
            ]
        )
    }
}
