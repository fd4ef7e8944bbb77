import Foundation
import TestSupport
import Testing

@testable import Spout

/// The OpenAPI document against what the service does: its router, the parameters each route accepts
/// (asked of the running service), the problem catalogue, and the media types of its streams.
@Suite(.offPool) struct OpenAPIDocumentTests {
    /// The served document, parsed by Foundation (not by our own writer).
    static func servedDocument(_ server: SpoutTestServer) throws -> [String: Any] {
        let response = try server.get("/openapi.json")
        #expect(response.status == 200)
        #expect(response.header("Content-Type") == "application/json")
        return try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
    }

    static func operations(_ document: [String: Any]) throws -> [(
        method: String, path: String, operation: [String: Any]
    )] {
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        return paths.flatMap { path, methods in
            methods.compactMap { method, operation in
                (operation as? [String: Any]).map { (method.uppercased(), path, $0) }
            }
        }
    }

    static func parameters(_ operation: [String: Any], in location: String) -> [[String: Any]] {
        ((operation["parameters"] as? [[String: Any]]) ?? []).filter { $0["in"] as? String == location }
    }

    @Test func theDocumentIsOpenAPI31AndRevalidatesWithItsTag() async throws {
        let server = try SpoutTestServer()
        let document = try Self.servedDocument(server)
        #expect(document["openapi"] as? String == "3.1.0")
        #expect((document["info"] as? [String: Any])?["title"] as? String == "Spout")
        let first = try server.get("/openapi.json")
        let tag = try #require(first.header("ETag"))
        #expect(first.header("Cache-Control") == "no-cache")
        #expect(try server.get("/openapi.json", headers: ["If-None-Match: \(tag)"]).status == 304)
        // Our writer and Foundation's reader agree on every byte that matters.
        let reparsed = try JSONSerialization.data(withJSONObject: document, options: [.sortedKeys])
        let ours = try JSONSerialization.data(
            withJSONObject: try JSONSerialization.jsonObject(
                with: Data(OpenAPIDocument(configuration: SpoutConfiguration()).bytes)
            ),
            options: [.sortedKeys]
        )
        #expect(reparsed == ours)
        await server.stop()
    }

    /// What a generated client reads first: the binary's version, the license, a server to call, and JSON as
    /// the first media type of the routes that also stream (a client decodes the first one it is given).
    @Test func theDocumentServesGeneratedClients() async throws {
        let server = try SpoutTestServer()
        let document = try Self.servedDocument(server)
        let info = try #require(document["info"] as? [String: Any])
        #expect(info["version"] as? String == BuildInfo.version)
        #expect((info["license"] as? [String: Any])?["identifier"] as? String == "Apache-2.0")
        #expect((document["servers"] as? [[String: Any]])?.first?["url"] as? String == "/")
        // On the text: the order of a JSON object's members is lost once parsed.
        let text = String(decoding: try server.get("/openapi.json").body, as: UTF8.self)
        for path in [#""/sequences/{name}""#, #""/workflow/{userId}""#] {
            let offsets = Self.offsets(of: [path, #""application/json""#, #""text/event-stream""#], in: text)
            #expect(offsets.count == 3, "\(path) or its media types are missing")
            if offsets.count == 3 {
                #expect(offsets[1] < offsets[2], "\(path): application/json is not listed first")
            }
        }
        await server.stop()
    }

    /// Character offsets in `text`: of the first needle, then of each other needle's first occurrence after
    /// it; the list stops at the first needle missing.
    static func offsets(of needles: [String], in text: String) -> [Int] {
        var found: [Int] = []
        var from = text.startIndex
        for needle in needles {
            guard let range = text.range(of: needle, range: from..<text.endIndex) else { break }
            found.append(text.distance(from: text.startIndex, to: range.lowerBound))
            if found.count == 1 { from = range.upperBound }
        }
        return found
    }

    @Test func everyRouteIsDocumentedAndEveryDocumentedOperationIsARoute() async throws {
        let server = try SpoutTestServer()
        let routed = Set(Routes.makeRouter().registered.map { "\($0.method) \($0.pattern)" })
        let documented = Set(try Self.operations(try Self.servedDocument(server)).map { "\($0.method) \($0.path)" })
        #expect(routed.subtracting(documented) == [], "routes missing from /openapi.json")
        #expect(documented.subtracting(routed) == [], "operations with no route")
        #expect(routed.count >= 20)
        await server.stop()
    }

    @Test func everyPathTemplateSegmentIsADeclaredPathParameter() async throws {
        let server = try SpoutTestServer()
        for (method, path, operation) in try Self.operations(try Self.servedDocument(server)) {
            let template = path.split(separator: "/").filter { $0.hasPrefix("{") }.map {
                String($0.dropFirst().dropLast())
            }
            let declared = Self.parameters(operation, in: "path")
            #expect(Set(declared.compactMap { $0["name"] as? String }) == Set(template), "\(method) \(path)")
            #expect(declared.allSatisfy { $0["required"] as? Bool == true })
            #expect(operation["operationId"] is String)
        }
        await server.stop()
    }

    /// Asks each route, with an unknown parameter, which query parameters it knows (its `400` lists them),
    /// and compares them with those the document declares. A route that validates no query answers
    /// normally; it must then declare none.
    @Test func theQueryParametersEachRouteValidatesAreTheDeclaredOnes() async throws {
        let server = try SpoutTestServer()
        for (method, path, operation) in try Self.operations(try Self.servedDocument(server)) {
            let declared = Set(Self.parameters(operation, in: "query").compactMap { $0["name"] as? String })
            let concrete = Self.samplePath(path, operation)
            let response =
                method == "POST"
                ? try Self.post(server, concrete + "?zz-unknown=1", body: #"{"data":1}"#)
                : try server.get(concrete + "?zz-unknown=1", headers: ["Accept: application/json"])
            let problem = RouteTest.object(response.body)
            if response.status == 400, problem["parameter"] as? String == "zz-unknown" {
                let detail = try #require(problem["detail"] as? String)
                let list = try #require(detail.components(separatedBy: "known parameters: ").last)
                let known = Set(
                    list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
                )
                #expect(known == declared, "\(path)")
            } else {
                #expect(response.status < 500, "\(concrete)")
                #expect(declared == [], "\(path) ignores its query but declares \(declared)")
            }
        }
        await server.stop()
    }

    @Test func theHeadersTheSequenceRouteReadsAreDeclared() async throws {
        let server = try SpoutTestServer()
        let operations = try Self.operations(try Self.servedDocument(server))
        func headers(_ path: String) throws -> Set<String> {
            let operation = try #require(operations.first { $0.path == path }?.operation)
            return Set(Self.parameters(operation, in: "header").compactMap { $0["name"] as? String })
                .subtracting(Self.correlationHeaders)
        }
        #expect(try headers("/sequences/{name}") == ["Last-Event-ID", "If-None-Match"])
        // Both change the answer.
        #expect(try server.get("/sequences/naturals?count=3", headers: ["Last-Event-ID: 2"]).status == 204)
        #expect(try server.get("/sequences/naturals?count=3&format=json", headers: ["If-None-Match: *"]).status == 304)
        #expect(try headers("/articles/stream") == ["Last-Event-ID"])
        #expect(try headers("/channels/{name}") == ["Last-Event-ID"])
        #expect(try headers("/workflow/{userId}") == ["Last-Event-ID"])
        // After the workflow's summary (id 5) there is nothing more to send, before any upstream call.
        #expect(try server.get("/workflow/1", headers: ["Last-Event-ID: 5"]).status == 204)
        #expect(try server.get("/workflow/1", headers: ["Last-Event-ID: x"]).status == 400)
        let workflow = try #require(operations.first { $0.path == "/workflow/{userId}" }?.operation)
        #expect((workflow["responses"] as? [String: Any])?["204"] != nil)
        await server.stop()
    }

    /// The request headers every route reads.
    static let correlationHeaders: Set<String> = ["X-Request-ID", "traceparent", "tracestate"]

    @Test func everyOperationDeclaresTheCorrelationHeadersAndTheyAreEchoed() async throws {
        let server = try SpoutTestServer()
        for (method, path, operation) in try Self.operations(try Self.servedDocument(server)) {
            let headers = Set(Self.parameters(operation, in: "header").compactMap { $0["name"] as? String })
            #expect(headers.isSuperset(of: Self.correlationHeaders), "\(method) \(path)")
        }
        let response = try server.get("/health", headers: ["X-Request-ID: abc-123"])
        #expect(response.header("X-Request-ID") == "abc-123")
        await server.stop()
    }

    @Test func everyProblemTypeIsListedAndEveryListedOneIsCatalogued() async throws {
        let server = try SpoutTestServer()
        let document = try Self.servedDocument(server)
        let schemas = try #require((document["components"] as? [String: Any])?["schemas"] as? [String: Any])
        let problem = try #require(schemas["Problem"] as? [String: Any])
        let type = try #require((problem["properties"] as? [String: Any])?["type"] as? [String: Any])
        #expect(type["enum"] as? [String] == ProblemType.all.map(\.uri))
        let members = Set(((problem["properties"] as? [String: Any]) ?? [:]).keys)
        #expect(members.isSuperset(of: ProblemType.all.flatMap(\.members).map(\.name)))
        var used: Set<String> = []
        for (method, path, operation) in try Self.operations(document) {
            let responses = try #require(operation["responses"] as? [String: [String: Any]])
            for (status, response) in responses {
                guard let content = response["content"] as? [String: Any],
                    let schema = (content[Problem.mediaType] as? [String: Any])?["schema"] as? [String: Any]
                else { continue }
                #expect((400...599).contains(Int(status) ?? 0), "\(method) \(path) \(status)")
                let type = (schema["properties"] as? [String: Any])?["type"] as? [String: Any]
                let listed = (type?["const"] as? String).map { [$0] } ?? (type?["enum"] as? [String]) ?? []
                #expect(!listed.isEmpty, "\(method) \(path) \(status): the problem's type is not stated")
                for uri in listed {
                    let catalogued = try #require(ProblemType.named(uri: uri))
                    #expect(catalogued.statuses.contains(Int(status) ?? 0), "\(path) \(status) \(uri)")
                    used.insert(uri)
                }
            }
        }
        // Every type is some operation's answer, but one: `method-not-allowed` answers the methods no operation
        // has (the document says so once, in its description); it is in the Problem schema's `type` enum above.
        #expect(used == Set(ProblemType.all.map(\.uri)).subtracting([ProblemType.methodNotAllowed.uri]))
        let description = try #require((document["info"] as? [String: Any])?["description"] as? String)
        #expect(description.contains("other methods get 405 with Allow"))
        #expect(description.contains("POST /channels/{name}/events, which answers POST and OPTIONS"))
        #expect(ProblemType.methodNotAllowed.meaning.contains("POST /channels/{name}/events"))
        await server.stop()
    }

    @Test func streamsAreDescribedWithTheirMediaTypes() async throws {
        let server = try SpoutTestServer()
        let operations = try Self.operations(try Self.servedDocument(server))
        func mediaTypes(_ path: String) throws -> Set<String> {
            let operation = try #require(operations.first { $0.path == path }?.operation)
            let ok = try #require((operation["responses"] as? [String: Any])?["200"] as? [String: Any])
            return Set(((ok["content"] as? [String: Any]) ?? [:]).keys)
        }
        #expect(
            try mediaTypes("/sequences/{name}") == ["text/event-stream", "application/x-ndjson", "application/json"]
        )
        #expect(try mediaTypes("/articles/stream") == ["text/event-stream", "application/x-ndjson"])
        #expect(
            try mediaTypes("/workflow/{userId}") == ["text/event-stream", "application/x-ndjson", "application/json"]
        )
        #expect(try mediaTypes("/metrics") == ["text/plain; version=0.0.4; charset=utf-8"])
        #expect(try mediaTypes("/channels/{name}") == ["text/event-stream", "application/x-ndjson"])
        // The channel stream is labelled as the other streams are: one Cache-Control, and Vary: Accept, since
        // it negotiates its format.
        let client = try server.connect()
        defer { client.close() }
        try client.send("HEAD /channels/doc HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let head = try client.readResponse(timeout: .seconds(10), isHead: true)
        #expect(head.status == 200)
        #expect(head.header("Content-Type") == "text/event-stream")
        #expect(head.headers.filter { $0.0.lowercased() == "cache-control" }.map(\.1) == ["no-cache"])
        #expect(head.header("Vary") == "Accept")
        await server.stop()
    }

    @Test func theConfiguredLimitsAreTheDocumentedOnes() async throws {
        let server = try SpoutTestServer { configuration in
            configuration.sequences.maxCount = 77
            configuration.sequences.maxStart = 555
            configuration.sequences.maxIntervalMilliseconds = 999
        }
        let operations = try Self.operations(try Self.servedDocument(server))
        let sequence = try #require(operations.first { $0.path == "/sequences/{name}" }?.operation)
        func maximum(_ name: String) -> Int? {
            (Self.parameters(sequence, in: "query").first { $0["name"] as? String == name }?["schema"] as? [String: Any])?[
                "maximum"
            ] as? Int
        }
        #expect(maximum("count") == 77)
        #expect(maximum("start") == 555)
        #expect(maximum("interval") == 999)
        // And the service enforces exactly those.
        #expect(try server.get("/sequences/naturals?count=77&format=json").status == 200)
        #expect(try server.get("/sequences/naturals?count=78&format=json").status == 400)
        #expect(try server.get("/sequences/naturals?count=1&start=555&format=json").status == 200)
        #expect(try server.get("/sequences/naturals?count=1&start=556&format=json").status == 400)
        await server.stop()
    }

    @Test func thePublishBodyIsDescribedAndTheRouteTakesWhatItDescribes() async throws {
        let server = try SpoutTestServer()
        let document = try Self.servedDocument(server)
        let operations = try Self.operations(document)
        let publish = try #require(
            operations.first { $0.method == "POST" && $0.path == "/channels/{name}/events" }?.operation
        )
        let body = try #require(publish["requestBody"] as? [String: Any])
        #expect(body["required"] as? Bool == true)
        let content = try #require(body["content"] as? [String: Any])
        #expect(Set(content.keys) == ["application/json"])
        let reference = ((content["application/json"] as? [String: Any])?["schema"] as? [String: Any])?["$ref"]
        #expect(reference as? String == "#/components/schemas/ChannelPublishBody")
        let schemas = try #require((document["components"] as? [String: Any])?["schemas"] as? [String: Any])
        let publication = try #require(schemas["ChannelPublication"] as? [String: Any])
        #expect(publication["additionalProperties"] as? Bool == false)
        #expect(publication["required"] as? [String] == ["data"])
        #expect(Set(((publication["properties"] as? [String: Any]) ?? [:]).keys) == ["data", "event"])
        let alternatives = try #require(
            (schemas["ChannelPublishBody"] as? [String: Any])?["oneOf"] as? [[String: Any]]
        )
        #expect(alternatives.count == 2)
        #expect(alternatives.contains { $0["type"] as? String == "array" && $0["minItems"] as? Int == 1 })
        // The only operation with a body; every other has none.
        #expect(operations.filter { $0.operation["requestBody"] != nil }.count == 1)
        // What the document describes is what the route takes, and what it refuses it refuses with the
        // documented statuses and types.
        let responses = try #require(publish["responses"] as? [String: Any])
        // 414 and 431 are on every operation: the server's refusal of an over-long head, before routing.
        #expect(
            Set(responses.keys) == ["202", "400", "401", "403", "409", "413", "414", "415", "422", "429", "431", "503"]
        )
        let accepted = try Self.post(server, "/channels/doc/events", body: #"[{"data":{"x":1},"event":"note"}]"#)
        #expect(accepted.status == 202)
        let answer = RouteTest.object(accepted.body)
        #expect(answer["channel"] as? String == "doc")
        #expect((answer["ids"] as? [String])?.count == 1)
        for (refused, status, type) in [
            (#"{"data":1,"extra":2}"#, 400, ProblemType.invalidBody),
            ("[]", 400, .invalidBody),
            (#"{"event":"x"}"#, 400, .invalidBody),
        ] {
            let response = try Self.post(server, "/channels/doc/events", body: refused)
            #expect(response.status == status, "\(refused)")
            #expect(RouteTest.object(response.body)["type"] as? String == type.uri, "\(refused)")
        }
        // The Idempotency-Key header it declares: a retry gets the first ids, another body 422, a repeated key 400.
        let parameters = (publish["parameters"] as? [[String: Any]]) ?? []
        #expect(parameters.contains { $0["name"] as? String == "Idempotency-Key" && $0["in"] as? String == "header" })
        let key = #"Idempotency-Key: "doc-1""#
        let keyed = try Self.post(server, "/channels/doc/events", body: #"{"data":1}"#, headers: [key])
        let retried = try Self.post(server, "/channels/doc/events", body: #"{"data":1}"#, headers: [key])
        #expect(keyed.status == 202 && retried.status == 202)
        #expect(RouteTest.object(retried.body)["ids"] as? [String] == RouteTest.object(keyed.body)["ids"] as? [String])
        for (headers, body, status, type) in [
            ([key], #"{"data":2}"#, 422, ProblemType.idempotencyKeyReused),
            ([key, key], #"{"data":1}"#, 400, .invalidParameter),
        ] {
            let response = try Self.post(server, "/channels/doc/events", body: body, headers: headers)
            #expect(response.status == status, "\(headers)")
            #expect(RouteTest.object(response.body)["type"] as? String == type.uri, "\(headers)")
        }
        let text = try Self.post(server, "/channels/doc/events", body: #"{"data":1}"#, contentType: "text/plain")
        #expect(text.status == 415)
        let unnamed = try Self.post(server, "/channels/no%20space/events", body: #"{"data":1}"#)
        #expect(unnamed.status == 400)
        // The methods the path does not take, without a body: 405 naming the one it does (the document says so
        // in its description, not per operation).
        let wrongMethod = try server.get("/channels/doc/events")
        #expect(wrongMethod.status == 405)
        #expect(wrongMethod.header("Allow") == "POST, OPTIONS")
        #expect(RouteTest.object(wrongMethod.body)["type"] as? String == ProblemType.methodNotAllowed.uri)
        await server.stop()
    }

    @Test func tokensAreDocumentedAsConfigured() async throws {
        func security(_ document: [String: Any], _ method: String, _ path: String) throws -> [[String: [String]]]? {
            let operation = try #require(
                try Self.operations(document).first { $0.method == method && $0.path == path }?.operation
            )
            return operation["security"] as? [[String: [String]]]
        }
        let open = try SpoutTestServer()
        let openDocument = try Self.servedDocument(open)
        let schemes = try #require(
            (openDocument["components"] as? [String: Any])?["securitySchemes"] as? [String: [String: Any]]
        )
        #expect(Set(schemes.keys) == ["publishToken", "subscribeToken", "subscribeQueryToken", "jwt"])
        #expect(schemes["jwt"]?["bearerFormat"] as? String == "JWT")
        #expect(schemes["publishToken"]?["scheme"] as? String == "bearer")
        #expect(schemes["subscribeToken"]?["scheme"] as? String == "bearer")
        // The query alternative is the parameter the route reads.
        #expect(schemes["subscribeQueryToken"]?["in"] as? String == "query")
        #expect(schemes["subscribeQueryToken"]?["name"] as? String == "token")
        // No tokens configured: nothing declares one (publishing is then for loopback clients alone).
        for (method, path) in Self.channelOperations {
            #expect(try security(openDocument, method, path) == nil, "\(method) \(path)")
        }
        await open.stop()

        let guarded = try SpoutTestServer { configuration in
            configuration.channels.publishTokens = ["pub-secret"]
            configuration.channels.subscribeTokens = ["sub-secret"]
        }
        let document = try Self.servedDocument(guarded)
        #expect(try security(document, "POST", "/channels/{name}/events") == [["publishToken": []]])
        #expect(try security(document, "GET", "/channels") == [["publishToken": []]])
        let subscribe: [[String: [String]]] = [["subscribeToken": []], ["subscribeQueryToken": []]]
        #expect(try security(document, "GET", "/channels/{name}") == subscribe)
        #expect(try security(document, "GET", "/channels/{name}/latest") == subscribe)
        // The documented 401 carries the documented challenge.
        let publish = try #require(
            try Self.operations(document).first { $0.method == "POST" }?.operation
        )
        let unauthorized = try #require((publish["responses"] as? [String: Any])?["401"] as? [String: Any])
        #expect((unauthorized["headers"] as? [String: Any])?["WWW-Authenticate"] != nil)
        let refused = try Self.post(guarded, "/channels/doc/events", body: #"{"data":1}"#)
        #expect(refused.status == 401)
        #expect(refused.header("WWW-Authenticate") == #"Bearer realm="spout""#)
        let wrong = try Self.post(
            guarded,
            "/channels/doc/events",
            body: #"{"data":1}"#,
            headers: ["Authorization: Bearer nope"]
        )
        #expect(wrong.status == 403)
        let right = try Self.post(
            guarded,
            "/channels/doc/events",
            body: #"{"data":1}"#,
            headers: ["Authorization: Bearer pub-secret"]
        )
        #expect(right.status == 202)
        #expect(try guarded.get("/channels/doc/latest").status == 401)
        #expect(try guarded.get("/channels/doc/latest?token=sub-secret").status == 200)
        await guarded.stop()

        // With channels.jwt on, the operations take a JWT too, and the 401 lists the token problems.
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("jwks-\(UUID().uuidString).json").path
        try Data(#"{"keys":[]}"#.utf8).write(to: URL(fileURLWithPath: path))
        let signed = try SpoutTestServer { $0.channels.jwt.jwksFile = path }
        let signedDocument = try Self.servedDocument(signed)
        #expect(try security(signedDocument, "POST", "/channels/{name}/events") == [["jwt": []]])
        #expect(try security(signedDocument, "GET", "/channels/{name}") == [["jwt": []], ["subscribeQueryToken": []]])
        let signedPublish = try #require(try Self.operations(signedDocument).first { $0.method == "POST" }?.operation)
        let documented = try #require((signedPublish["responses"] as? [String: Any])?["401"] as? [String: Any])
        #expect((documented["description"] as? String)?.contains("token-") == true)
        // /subscribe and the presence route take the JWT as the channel routes do.
        for (method, path) in [("GET", "/subscribe"), ("GET", "/channels/{name}/presence")] {
            #expect(
                try security(signedDocument, method, path) == [["jwt": []], ["subscribeQueryToken": []]],
                "\(method) \(path)"
            )
        }
        await signed.stop()

        // With channels.jwt.cookieName, the cookie is a scheme of its own (apiKey in cookie, named), which every
        // subscription route lists; publishing never reads it.
        let cookied = try SpoutTestServer {
            $0.channels.jwt.jwksFile = path
            $0.channels.jwt.cookieName = "spout_token"
        }
        let cookiedDocument = try Self.servedDocument(cookied)
        let cookieSchemes = try #require(
            (cookiedDocument["components"] as? [String: Any])?["securitySchemes"] as? [String: [String: Any]]
        )
        #expect(cookieSchemes["jwtCookie"]?["type"] as? String == "apiKey")
        #expect(cookieSchemes["jwtCookie"]?["in"] as? String == "cookie")
        #expect(cookieSchemes["jwtCookie"]?["name"] as? String == "spout_token")
        #expect(cookieSchemes["jwt"]?["scheme"] as? String == "bearer")
        let withCookie: [[String: [String]]] = [["jwt": []], ["jwtCookie": []], ["subscribeQueryToken": []]]
        for path in ["/subscribe", "/channels/{name}", "/channels/{name}/latest", "/channels/{name}/presence"] {
            #expect(try security(cookiedDocument, "GET", path) == withCookie, "\(path)")
        }
        #expect(try security(cookiedDocument, "POST", "/channels/{name}/events") == [["jwt": []]])
        await cookied.stop()
    }

    static let channelOperations = [
        ("GET", "/channels"), ("GET", "/channels/{name}"), ("GET", "/channels/{name}/latest"),
        ("POST", "/channels/{name}/events"),
    ]

    /// One POST with a body on a fresh connection, read to the end.
    static func post(
        _ server: SpoutTestServer,
        _ path: String,
        body: String,
        contentType: String = "application/json",
        headers: [String] = []
    ) throws -> LoopbackClient.Response {
        let client = try server.connect()
        defer { client.close() }
        let bytes = Array(body.utf8)
        var request = "POST \(path) HTTP/1.1\r\nHost: localhost\r\nContent-Type: \(contentType)\r\n"
        request += "Content-Length: \(bytes.count)\r\n"
        for line in headers { request += line + "\r\n" }
        try client.send(Array((request + "\r\n").utf8) + bytes)
        return try client.readResponse(timeout: .seconds(10), isHead: false)
    }

    /// `path` with each `{parameter}` replaced by a value its schema allows.
    static func samplePath(_ path: String, _ operation: [String: Any]) -> String {
        var result = path
        for parameter in parameters(operation, in: "path") {
            guard let name = parameter["name"] as? String else { continue }
            let schema = parameter["schema"] as? [String: Any] ?? [:]
            let value = (schema["enum"] as? [String])?.first ?? String(max(1, schema["minimum"] as? Int ?? 1))
            result = result.replacingOccurrences(of: "{\(name)}", with: value)
        }
        return result
    }
}
