/// The OpenAPI 3.1 document of ``SpoutAPI``, rendered for one configuration.
///
/// **Thread safety:** value type; immutable once built.
struct OpenAPIDocument: Sendable {
    /// The document as JSON.
    let value: JSONValue
    /// Its compact JSON text, as served.
    let bytes: [UInt8]
    /// A strong tag for ``bytes``.
    let tag: EntityTag

    init(configuration: SpoutConfiguration) {
        let operations = SpoutAPI.operations(configuration: configuration)
        var paths: [(String, JSONValue)] = []
        for operation in operations {
            let entry = Self.json(operation)
            let method = operation.method.lowercased()
            if let index = paths.firstIndex(where: { $0.0 == operation.path }) {
                paths[index].1 = paths[index].1.setting(method, to: entry)
            } else {
                paths.append((operation.path, [(method, entry)].jsonObject))
            }
        }
        var tags: [String] = []
        for operation in operations where !tags.contains(operation.tag) { tags.append(operation.tag) }
        value = [
            "openapi": "3.1.0",
            // Relative: the instance that served the document (a generated client is pointed at its base URL).
            "servers": [["url": "/", "description": "the instance serving this document"] as JSONValue],
            "info": [
                "title": "Spout",
                "version": .string(BuildInfo.version),
                "summary": "Streamed sequences, upstream pipelines and live channels, paced by the client's reads.",
                "description": .string(
                    """
                    Every route answers GET, HEAD and OPTIONS (a CORS preflight, 204), but \
                    POST /channels/{name}/events, which answers POST and OPTIONS; other methods get 405 with \
                    Allow (a problem), unknown paths 404, an Accept no format satisfies 406 (on the routes that \
                    negotiate), a request with a body 413 (only POST /channels/{name}/events takes one, up to \
                    \(configuration.limits.maxBodyBytes) bytes; plain text, connection closed). Errors are RFC \
                    9457 problems (application/problem+json) whose `type` resolves to a page at \
                    /problems/{type}; problem bodies never carry the upstream's address, only the \
                    resource path. Every response carries X-Request-ID: the client's when it is valid (1 to \
                    128 of A-Z a-z 0-9 - _ . : + = / @ ~), else a generated one; it and the W3C traceparent \
                    and tracestate are forwarded to upstream calls. JSON bodies of at least \
                    \(configuration.compression.minimumBytes) bytes are gzip-coded for clients that prefer it\
                    \(configuration.compression.enabled ? "" : " (turned off here)"); streams never are. The \
                    channel routes take tokens (securitySchemes publishToken, subscribeToken, subscribeQueryToken, jwt, \
                    jwtCookie) when \
                    they are configured; without publish tokens only loopback clients may publish.
                    """
                ),
                "license": ["name": "Apache License 2.0", "identifier": "Apache-2.0"] as JSONValue,
            ],
            "tags": .array(tags.map { tag -> JSONValue in ["name": .string(tag)] }),
            "paths": .object(paths),
            "components": [
                "schemas": .object(SpoutAPI.schemas),
                "securitySchemes": .object(SpoutAPI.securitySchemes(configuration)),
            ],
        ]
        bytes = value.bytes
        tag = EntityTag.digest(of: bytes)
    }

    private static func json(_ operation: APIOperation) -> JSONValue {
        var object: [(String, JSONValue)] = [
            ("operationId", .string(operation.operationID)),
            ("tags", [.string(operation.tag)]),
            ("summary", .string(operation.summary)),
        ]
        if !operation.description.isEmpty { object.append(("description", .string(operation.description))) }
        let parameters = operation.parameters + SpoutAPI.correlationParameters
        object.append(("parameters", .array(parameters.map(\.json))))
        if let body = operation.requestBody { object.append(("requestBody", body.json)) }
        if let security = operation.security {
            object.append(
                (
                    "security",
                    .array(
                        security.map { schemes -> JSONValue in .object(schemes.map { ($0, JSONValue.array([])) }) }
                    )
                )
            )
        }
        let responses = operation.responses + SpoutAPI.headRefusals
        object.append(("responses", .object(responses.map { ($0.status, $0.json) })))
        return .object(object)
    }
}

extension Array where Element == (String, JSONValue) {
    fileprivate var jsonObject: JSONValue { .object(self) }
}
