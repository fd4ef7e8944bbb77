/// One operation of the OpenAPI document: a method on a path, its parameters, its request body (if it takes
/// one), who may call it, and its responses, as Swift data. ``SpoutAPI`` lists Spout's; ``OpenAPIDocument`` renders them.
///
/// **Thread safety:** value type; not shared.
struct APIOperation: Sendable {
    /// The router's pattern, which is also OpenAPI's path template: `/articles/{id}`.
    let path: String
    /// The router's method, upper case.
    let method: String
    let operationID: String
    let tag: String
    let summary: String
    let description: String
    let parameters: [APIParameter]
    /// The body the operation reads (`POST /channels/{name}/events`); `nil` for the routes that take none.
    let requestBody: APIRequestBody?
    /// OpenAPI's `security`: the alternatives of security schemes (``SpoutAPI/securitySchemes``) of which one
    /// must be satisfied; `nil` when the operation needs no credentials.
    let security: [[String]]?
    let responses: [APIResponse]

    init(
        _ method: String = "GET",
        _ path: String,
        id operationID: String,
        tag: String,
        summary: String,
        description: String = "",
        parameters: [APIParameter] = [],
        requestBody: APIRequestBody? = nil,
        security: [[String]]? = nil,
        responses: [APIResponse]
    ) {
        self.method = method
        self.path = path
        self.operationID = operationID
        self.tag = tag
        self.summary = summary
        self.description = description
        self.parameters = parameters
        self.requestBody = requestBody
        self.security = security
        self.responses = responses
    }

    /// The names of the `{…}` segments of ``path``.
    var pathTemplateNames: [String] {
        path.split(separator: "/").compactMap { segment in
            segment.hasPrefix("{") && segment.hasSuffix("}") ? String(segment.dropFirst().dropLast()) : nil
        }
    }

    /// The problem types this operation's responses list.
    var problemTypes: [ProblemType] {
        responses.flatMap(\.problemTypes)
    }
}

/// A parameter of an ``APIOperation``.
///
/// **Thread safety:** value type; not shared.
struct APIParameter: Sendable {
    enum Location: String, Sendable {
        case path
        case query
        case header
    }

    let name: String
    let location: Location
    let description: String
    let required: Bool
    let schema: JSONValue

    static func path(_ name: String, _ description: String, _ schema: JSONValue) -> APIParameter {
        APIParameter(name: name, location: .path, description: description, required: true, schema: schema)
    }

    static func query(_ name: String, _ description: String, _ schema: JSONValue) -> APIParameter {
        APIParameter(name: name, location: .query, description: description, required: false, schema: schema)
    }

    static func header(_ name: String, _ description: String, _ schema: JSONValue) -> APIParameter {
        APIParameter(name: name, location: .header, description: description, required: false, schema: schema)
    }

    var json: JSONValue {
        [
            "name": .string(name),
            "in": .string(location.rawValue),
            "description": .string(description),
            "required": .bool(required),
            "schema": schema,
        ]
    }
}

/// The request body of an ``APIOperation``: what it holds and its schema by media type.
///
/// **Thread safety:** value type; not shared.
struct APIRequestBody: Sendable {
    let description: String
    let required: Bool
    let content: [(mediaType: String, schema: JSONValue)]

    init(_ description: String, required: Bool = true, content: [(mediaType: String, schema: JSONValue)]) {
        self.description = description
        self.required = required
        self.content = content
    }

    var json: JSONValue {
        [
            "description": .string(description),
            "required": .bool(required),
            "content": .object(content.map { ($0.mediaType, ["schema": $0.schema]) }),
        ]
    }
}

/// A response of an ``APIOperation``: a status, what it means, and its bodies by media type.
///
/// **Thread safety:** value type; not shared.
struct APIResponse: Sendable {
    let status: String
    let description: String
    let content: [(mediaType: String, schema: JSONValue)]
    let headers: [(name: String, description: String, schema: JSONValue)]
    /// The problem types a problem response may carry (empty for others).
    let problemTypes: [ProblemType]

    init(
        _ status: Int,
        _ description: String,
        content: [(mediaType: String, schema: JSONValue)] = [],
        headers: [(name: String, description: String, schema: JSONValue)] = [],
        problemTypes: [ProblemType] = []
    ) {
        self.status = String(status)
        self.description = description
        self.content = content
        self.headers = headers
        self.problemTypes = problemTypes
    }

    /// A JSON body of `schema`.
    static func json(
        _ status: Int = 200,
        _ description: String,
        _ schema: JSONValue,
        headers: [(name: String, description: String, schema: JSONValue)] = []
    ) -> APIResponse {
        APIResponse(status, description, content: [("application/json", schema)], headers: headers)
    }

    /// An `application/problem+json` body of one of `types` (its `type` a `const`, or an `enum` of several), all
    /// sent with `status`.
    static func problem(_ status: Int, _ types: ProblemType...) -> APIResponse {
        let names = types.map { "`\($0.uri)` (\($0.title.lowercased()))" }.joined(separator: " or ")
        return APIResponse(
            status,
            "A problem: \(names).",
            content: [(Problem.mediaType, SpoutAPI.problemSchema(types))],
            problemTypes: types
        )
    }

    var json: JSONValue {
        var object: [(String, JSONValue)] = [("description", .string(description))]
        if !headers.isEmpty {
            object.append(
                (
                    "headers",
                    .object(
                        headers.map { header in
                            (header.name, ["description": .string(header.description), "schema": header.schema])
                        }
                    )
                )
            )
        }
        if !content.isEmpty {
            object.append(("content", .object(content.map { ($0.mediaType, ["schema": $0.schema]) })))
        }
        return .object(object)
    }
}
