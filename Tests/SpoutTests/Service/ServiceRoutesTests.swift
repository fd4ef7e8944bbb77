import Foundation
import TestSupport
import Testing

@testable import Spout

@Suite(.offPool) struct ServiceRoutesTests {
    @Test func healthReadyAndListingAnswerJSON() async throws {
        let server = try SpoutTestServer()
        let health = try server.get("/health")
        #expect(health.status == 200)
        #expect(health.header("Content-Type") == "application/json")
        #expect(health.text == #"{"status":"ok"}"#)

        let ready = try server.get("/ready")
        #expect(ready.status == 200)
        #expect(ready.text == #"{"ready":true}"#)

        let list = try server.get("/sequences")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(list.body)) as? [String: Any])
        let names = (object["sequences"] as? [[String: Any]])?.compactMap { $0["name"] as? String }
        #expect(names == ["fibonacci", "naturals", "primes", "factorial"])
        await server.stop()
    }

    @Test func metricsCountRequestsByRouteAndStatus() async throws {
        let server = try SpoutTestServer()
        _ = try server.get("/health")
        _ = try server.get("/sequences/fibonacci?count=abc")
        _ = try server.get("/nope")
        _ = try server.get("/sequences/naturals?count=3")
        let metrics = try server.get("/metrics")
        #expect(metrics.header("Content-Type")?.hasPrefix("text/plain; version=0.0.4") == true)
        #expect(metrics.text.contains(#"spout_http_requests_total{route="/health",status="200"} 1"#))
        #expect(metrics.text.contains(#"spout_http_requests_total{route="/sequences/{name}",status="400"} 1"#))
        #expect(metrics.text.contains(#"spout_http_requests_total{route="unmatched",status="404"} 1"#))
        #expect(metrics.text.contains(#"spout_streams_ended_total{reason="completed"} 1"#))
        #expect(metrics.text.contains("spout_events_sent_total 3"))
        #expect(metrics.text.contains("spout_active_streams 0"))
        #expect(metrics.text.contains("spout_http_request_duration_seconds_bucket{route=\"/health\",le=\"+Inf\"} 1"))
        await server.stop()
    }

    @Test(arguments: [
        ("/sequences/fibonacci?count=-1", 400, "count", "count must be a non-negative integer, got \"-1\""),
        ("/sequences/fibonacci?count=abc", 400, "count", "count must be a non-negative integer, got \"abc\""),
        ("/sequences/fibonacci?start=100001", 400, "start", "start must be between 0 and 100000, got 100001"),
        ("/sequences/factorial?start=20000", 400, "start", "start must be between 0 and 10000, got 20000"),
        (
            "/sequences/fibonacci?interval=0.5s", 400, "interval",
            "interval must be a positive integer number of milliseconds, got \"0.5s\""
        ),
        ("/sequences/fibonacci?format=xml", 400, "format", "format must be one of sse, ndjson, json, got \"xml\""),
        (
            "/sequences/fibonacci?format=json", 400, "count",
            "count is required for JSON (at most 10000); streams may omit it"
        ),
        ("/sequences/fibonacci?format=json&count=10001", 400, "count", "count must be between 0 and 10000, got 10001"),
        (
            "/sequences/fibonacci?cout=5", 400, "cout",
            "unknown parameter \"cout\"; known parameters: count, format, interval, start"
        ),
        (
            "/sequences/fibonacci?count=99999999999999999999999999", 400, "count",
            "count must be between 0 and 9223372036854775807, got 99999999999999999999999999"
        ),
        ("/sequences/fibonacci?count=1&count=2", 400, "count", "count must be given at most once"),
    ])
    func badInputGetsAProblemNamingTheParameter(path: String, status: Int, parameter: String, detail: String)
        async throws
    {
        let server = try SpoutTestServer()
        let response = try server.get(path)
        #expect(response.status == status)
        #expect(response.header("Content-Type") == "application/problem+json")
        let problem = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
        #expect(problem["status"] as? Int == status)
        #expect(problem["parameter"] as? String == parameter)
        #expect(problem["detail"] as? String == detail)
        #expect(
            problem["instance"] as? String == "/sequences/\(path.split(separator: "/")[1].split(separator: "?")[0])"
        )
        #expect(server.isHealthy())
        await server.stop()
    }

    @Test func unknownSequenceAndPathAreNotFoundAndWrongMethodIsNotAllowed() async throws {
        let server = try SpoutTestServer()
        let unknown = try server.get("/sequences/lucas")
        #expect(unknown.status == 404)
        #expect(
            unknown.text.contains(
                #"unknown sequence \"lucas\"; known sequences: fibonacci, naturals, primes, factorial"#
            )
        )
        let nothing = try server.get("/" + String(repeating: "a", count: 4000))
        #expect(nothing.status == 404)
        #expect(nothing.body.count < 600)

        let client = try server.connect()
        try client.send("DELETE /health HTTP/1.1\r\nHost: x\r\n\r\n")
        let deleted = try client.readResponse()
        #expect(deleted.status == 405)
        #expect(deleted.header("Allow") == "GET, HEAD, OPTIONS")
        #expect(deleted.header("Content-Type") == "application/problem+json")
        client.close()
        #expect(server.isHealthy())
        await server.stop()
    }

    @Test func corsAllowsConfiguredOriginsAndAnswersPreflight() async throws {
        let server = try SpoutTestServer { $0.cors.allowedOrigins = ["https://app.example"] }
        let allowed = try server.get("/health", headers: ["Origin: https://app.example"])
        #expect(allowed.header("Access-Control-Allow-Origin") == "https://app.example")
        #expect(allowed.header("Vary") == "Origin")
        let other = try server.get("/health", headers: ["Origin: https://evil.example"])
        #expect(other.header("Access-Control-Allow-Origin") == nil)
        #expect(other.header("Vary") == "Origin")

        let client = try server.connect()
        try client.send(
            "OPTIONS /sequences/fibonacci HTTP/1.1\r\nHost: x\r\nOrigin: https://app.example\r\n"
                + "Access-Control-Request-Method: GET\r\nAccess-Control-Request-Headers: last-event-id\r\n\r\n"
        )
        let preflight = try client.readResponse()
        #expect(preflight.status == 204)
        #expect(preflight.header("Access-Control-Allow-Origin") == "https://app.example")
        #expect(preflight.header("Access-Control-Allow-Methods") == "GET, HEAD, OPTIONS")
        #expect(preflight.header("Access-Control-Allow-Headers") == "last-event-id")
        #expect(preflight.header("Vary") == "Origin, Access-Control-Request-Headers")
        client.close()

        let open = try SpoutTestServer()
        #expect(
            try open.get("/sequences/fibonacci?count=1", headers: ["Origin: https://any.example"]).header(
                "Access-Control-Allow-Origin"
            ) == "*"
        )
        await open.stop()
        await server.stop()
    }

    @Test func everyRequestIsLoggedAsOneJSONLine() async throws {
        let server = try SpoutTestServer()
        _ = try server.get("/health")
        _ = try server.get("/sequences/naturals?count=5")
        #expect(eventually { server.log.lines.count >= 2 })
        let entries = try server.log.lines.map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        }
        #expect(entries[0]["path"] as? String == "/health")
        #expect(entries[0]["status"] as? Int == 200)
        #expect(entries[0]["bytes"] as? Int == 15)
        #expect(entries[1]["events"] as? Int == 5)
        #expect(entries[1]["end"] as? String == "completed")
        #expect(
            entries.allSatisfy {
                $0["time"] is String && $0["duration_ms"] is Double && $0["method"] as? String == "GET"
            }
        )
        await server.stop()
    }

    @Test func aRequestWithABodyOnARouteThatTakesNoneIsRefusedAtOnce() async throws {
        let server = try SpoutTestServer()
        for request in [
            "GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
            "GET /sequences/naturals HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n",
            "OPTIONS /health HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx",
            "DELETE /health HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx",
            // Only the head and the first byte of a body that would take long to send: refused on that byte.
            "GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\nx",
        ] {
            let client = try server.connect()
            try client.send(request)
            let response = try client.readResponse()
            #expect(response.status == 413, "\(request)")
            // A problem, as the server's own errors are where the catalogue has their kind.
            #expect(response.header("Content-Type") == "application/problem+json")
            #expect(response.text.contains(#""type":"/problems/content-too-large""#))
            #expect(response.text.contains("this request takes no body, got "))
            #expect(response.header("Connection")?.lowercased() == "close")
            #expect(client.waitForClose())
        }
        // Without a body the same requests are served as usual.
        let plain = try server.connect()
        try plain.send("GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        #expect(try plain.readResponse().status == 200)
        #expect(server.isHealthy())
        await server.stop()
    }
}
