import Foundation
import Reactive
import Sequences
import TestSupport
import Testing

@testable import Spout

/// `Cache-Control`, `ETag`, `304` and `Vary` on every kind of route, over real sockets.
@Suite(.offPool) struct HTTPCachingTests {
    static let fibonacci =
        #"{"sequence":"fibonacci","start":0,"count":10,"values":["0","1","1","2","3","5","8","13","21","34"]}"#

    @Test(arguments: ["/health", "/ready", "/metrics"])
    func serviceRoutesAreNeverStored(path: String) async throws {
        let server = try SpoutTestServer()
        let response = try server.get(path)
        #expect(response.status == 200)
        #expect(response.header("Cache-Control") == "no-store")
        #expect(response.header("Vary") == nil)
        #expect(response.header("ETag") == nil)
        await server.stop()
    }

    @Test func aFixedJSONSequenceIsImmutableWithAStrongTag() async throws {
        let server = try SpoutTestServer()
        let response = try server.get("/sequences/fibonacci?count=10", headers: ["Accept: application/json"])
        #expect(response.status == 200)
        #expect(response.text == Self.fibonacci)
        #expect(response.header("ETag") == #""s1-fibonacci-0-10""#)
        #expect(response.header("Cache-Control") == "max-age=31536000, immutable")
        #expect(response.header("Vary") == "Accept, Accept-Encoding")
        #expect(response.header("Content-Encoding") == nil)
        // The tag is a function of what fixes the bytes.
        let other = try server.get("/sequences/fibonacci?count=10&start=1&format=json")
        #expect(other.header("ETag") == #""s1-fibonacci-1-10""#)
        #expect(try server.get("/sequences/primes?count=10&format=json").header("ETag") == #""s1-primes-0-10""#)
        await server.stop()
    }

    @Test(arguments: [
        #""s1-fibonacci-0-10""#,
        #"W/"s1-fibonacci-0-10""#,
        "*",
        #""stale", "s1-fibonacci-0-10""#,
        #""stale", W/"s1-fibonacci-0-10""#,
    ])
    func aMatchingIfNoneMatchGets304BeforeAnyTermIsComputed(ifNoneMatch: String) async throws {
        let server = try SpoutTestServer()
        let response = try server.get(
            "/sequences/fibonacci?count=10",
            headers: ["Accept: application/json", "If-None-Match: \(ifNoneMatch)"]
        )
        #expect(response.status == 304)
        #expect(response.body.isEmpty)
        #expect(response.header("Content-Length") == nil)
        // What the 200 would have said about caching (RFC 9110 §15.4.5), and CORS.
        #expect(response.header("ETag") == #""s1-fibonacci-0-10""#)
        #expect(response.header("Cache-Control") == "max-age=31536000, immutable")
        #expect(response.header("Vary") == "Accept, Accept-Encoding")
        #expect(response.header("Access-Control-Allow-Origin") == "*")
        let probe = try #require(server.sequenceProbes.last)
        #expect(probe.produced == 0 && probe.requested == .none)
        #expect(eventually { server.log.lines.contains { $0.contains(#""status":304"#) } })
        #expect(server.isHealthy())
        await server.stop()
    }

    @Test func aTagThatDoesNotMatchGetsTheDocument() async throws {
        let server = try SpoutTestServer()
        for header in [#""s1-fibonacci-0-11""#, #""s1-fibonacci-0-10.gzip1-z0""#, "W/", ""] {
            let response = try server.get(
                "/sequences/fibonacci?count=10&format=json",
                headers: ["If-None-Match: \(header)"]
            )
            #expect(response.status == 200)
            #expect(response.text == Self.fibonacci)
        }
        await server.stop()
    }

    @Test func headWithAMatchingTagIs304AndWithoutTheHeadOfThe200() async throws {
        let server = try SpoutTestServer()
        let client = try server.connect()
        defer { client.close() }
        try client.send(
            "HEAD /sequences/fibonacci?count=10&format=json HTTP/1.1\r\nHost: x\r\nIf-None-Match: \"s1-fibonacci-0-10\"\r\n\r\n"
        )
        #expect(try client.readResponse(isHead: true).status == 304)
        try client.send("HEAD /sequences/fibonacci?count=10&format=json HTTP/1.1\r\nHost: x\r\n\r\n")
        let head = try client.readResponse(isHead: true)
        #expect(head.status == 200)
        #expect(head.header("Content-Length") == "99")
        #expect(head.header("ETag") == #""s1-fibonacci-0-10""#)
        await server.stop()
    }

    @Test func problemsAndStreamsOfTheSequenceRouteCarryNoValidator() async throws {
        let server = try SpoutTestServer()
        let problem = try server.get("/sequences/fibonacci?count=x&format=json", headers: ["If-None-Match: *"])
        #expect(problem.status == 400)
        #expect(problem.header("ETag") == nil)
        #expect(problem.header("Cache-Control") == nil)
        #expect(problem.header("Vary") == "Accept, Accept-Encoding")

        let client = try server.connect()
        defer { client.close() }
        try client.sendGet("/sequences/fibonacci?count=2", headers: ["Accept-Encoding: gzip", "If-None-Match: *"])
        let stream = try client.readResponse()
        #expect(stream.status == 200)
        #expect(stream.header("Content-Type") == "text/event-stream")
        #expect(stream.header("Cache-Control") == "no-cache")
        #expect(stream.header("Vary") == "Accept")
        #expect(stream.header("Content-Encoding") == nil)
        #expect(stream.header("ETag") == nil)
        await server.stop()
    }

    @Test func upstreamJSONFollowsTheUpstreamCacheTTL() async throws {
        let server = try SpoutTestServer { $0.upstream.cacheTTLSeconds = 45 }
        for path in ["/articles", "/articles/3", "/users/1/profile"] {
            let response = try server.get(path)
            #expect(response.status == 200)
            #expect(response.header("Cache-Control") == "max-age=45")
            #expect(response.header("Vary") == "Accept, Accept-Encoding")
        }
        // A problem is not stored for the TTL: the upstream may have the article a moment later.
        let missing = try server.get("/articles/999")
        #expect(missing.status == 404)
        #expect(missing.header("Cache-Control") == nil)
        // The dashboard may be partial, so it is not given a lifetime.
        let dashboard = try server.get("/dashboard/1")
        #expect(dashboard.status == 200)
        #expect(dashboard.header("Cache-Control") == nil)
        #expect(dashboard.header("Vary") == "Accept, Accept-Encoding")
        await server.stop()

        let uncached = try SpoutTestServer { $0.upstream.cacheTTLSeconds = 0 }
        #expect(try uncached.get("/articles/3").header("Cache-Control") == "no-cache")
        await uncached.stop()
    }

    @Test func withAnOriginListEveryResponseVariesOnOrigin() async throws {
        let server = try SpoutTestServer { $0.cors.allowedOrigins = ["https://a.example"] }
        for origin in ["https://a.example", "https://b.example", nil] {
            let headers = origin.map { ["Origin: \($0)"] } ?? []
            let answers: [(String, String)] = [
                ("/health", "Origin"),
                ("/sequences", "Accept-Encoding, Origin"),
                ("/sequences/fibonacci?count=2&format=json", "Accept, Accept-Encoding, Origin"),
                ("/sequences/fibonacci?count=x", "Accept, Accept-Encoding, Origin"),
                ("/nowhere", "Accept-Encoding, Origin"),
                ("/articles/3", "Accept, Accept-Encoding, Origin"),
                ("/problems/not-found", "Origin"),
            ]
            for (path, vary) in answers {
                let response = try server.get(path, headers: headers)
                #expect(response.header("Vary") == vary, "\(path) from \(origin ?? "no origin")")
                #expect(
                    response.header("Access-Control-Allow-Origin") == (origin == "https://a.example" ? origin : nil)
                )
            }
            let client = try server.connect()
            try client.sendGet("/sequences/naturals?count=1", headers: headers)
            #expect(try client.readResponse().header("Vary") == "Accept, Origin")
            try client.send(
                "POST /health HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n" + headers.map { $0 + "\r\n" }.joined()
                    + "\r\n"
            )
            let refused = try client.readResponse()
            #expect(refused.status == 405)
            #expect(refused.header("Vary") == "Accept-Encoding, Origin")
            try client.send(
                "OPTIONS /sequences/naturals HTTP/1.1\r\nHost: x\r\nAccess-Control-Request-Method: GET\r\n"
                    + headers.map { $0 + "\r\n" }.joined() + "\r\n"
            )
            #expect(try client.readResponse().header("Vary") == "Origin, Access-Control-Request-Headers")
            client.close()
        }
        await server.stop()
    }

    @Test func withAnyOriginAllowedOnlyThePreflightsEchoVaries() async throws {
        let server = try SpoutTestServer()
        let client = try server.connect()
        defer { client.close() }
        try client.send(
            "OPTIONS /articles HTTP/1.1\r\nHost: x\r\nOrigin: https://x.example\r\nAccess-Control-Request-Method: GET\r\n"
                + "Access-Control-Request-Headers: accept\r\n\r\n"
        )
        let preflight = try client.readResponse()
        #expect(preflight.status == 204)
        #expect(preflight.header("Access-Control-Allow-Origin") == "*")
        #expect(preflight.header("Access-Control-Allow-Headers") == "accept")
        #expect(preflight.header("Vary") == "Access-Control-Request-Headers")
        #expect(try server.get("/health", headers: ["Origin: https://x.example"]).header("Vary") == nil)
        await server.stop()
    }
}
