import Foundation
import TestSupport
import Testing

@testable import Spout

/// `X-Request-ID`, trace context and the request log's fields, over real loopback sockets.
@Suite(.offPool) struct CorrelationServiceTests {
    private static let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    /// The logged object of the request whose `request_id` is `id`, once it is logged.
    private func loggedEntry(_ server: SpoutTestServer, id: String) -> [String: Any]? {
        var found: [String: Any]?
        _ = eventually {
            found = server.log.lines.lazy.compactMap { line in
                (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
            }.first { $0["request_id"] as? String == id }
            return found != nil
        }
        return found
    }

    @Test func everyKindOfResponseEchoesTheClientsRequestID() async throws {
        let server = try SpoutTestServer()
        let cases: [(path: String, extra: [String], status: Int)] = [
            ("/health", [], 200),
            ("/sequences/fibonacci?count=3", ["Accept: application/json"], 200),
            ("/sequences/fibonacci?count=abc", [], 400),
            ("/nowhere", [], 404),
            ("/articles/1", [], 200),
            ("/articles/999", [], 404),
            ("/sequences", ["Origin: https://app.example"], 200),
        ]
        for (index, entry) in cases.enumerated() {
            let id = "case-\(index)"
            let response = try server.get(entry.path, headers: entry.extra + ["X-Request-ID: \(id)"])
            #expect(response.status == entry.status, "\(entry.path)")
            #expect(response.header("X-Request-ID") == id, "\(entry.path)")
        }
        // A streamed response, a HEAD, a 405 and a preflight.
        let stream = try StreamClient(
            port: server.port,
            path: "/sequences/naturals?count=2",
            headers: ["X-Request-ID: s-1"]
        )
        #expect(stream.header("X-Request-ID") == "s-1")
        let client = try server.connect()
        try client.send("HEAD /health HTTP/1.1\r\nHost: x\r\nX-Request-ID: h-1\r\n\r\n")
        #expect(try client.readResponse(isHead: true).header("X-Request-ID") == "h-1")
        try client.send("POST /health HTTP/1.1\r\nHost: x\r\nX-Request-ID: p-1\r\nContent-Length: 0\r\n\r\n")
        let notAllowed = try client.readResponse()
        #expect(notAllowed.status == 405)
        #expect(notAllowed.header("X-Request-ID") == "p-1")
        try client.send("OPTIONS /health HTTP/1.1\r\nHost: x\r\nOrigin: https://a.example\r\nX-Request-ID: o-1\r\n\r\n")
        let preflight = try client.readResponse()
        #expect(preflight.status == 204)
        #expect(preflight.header("X-Request-ID") == "o-1")
        #expect(server.isHealthy())
        await server.stop()
    }

    @Test func unsafeOrMissingIDsAreReplacedByGeneratedOnes() async throws {
        let server = try SpoutTestServer()
        let unsafe = try server.get("/health", headers: ["X-Request-ID: " + String(repeating: "x", count: 200)])
        let spaced = try server.get("/health", headers: ["X-Request-ID: a b"])
        let none = try server.get("/health")
        let none2 = try server.get("/health")
        let ids = [unsafe, spaced, none, none2].compactMap { $0.header("X-Request-ID") }
        #expect(ids.count == 4)
        #expect(Set(ids).count == 4)
        #expect(ids.allSatisfy { $0.utf8.count == 15 && RequestCorrelation.isValidRequestID($0) })
        await server.stop()
    }

    @Test func theLogLineCarriesTheRequestsContext() async throws {
        let server = try SpoutTestServer()
        _ = try server.get(
            "/sequences/fibonacci?count=2&token=s3cret&format=json",
            headers: ["X-Request-ID: log-1", "User-Agent: probe/1.0 (\"quoted\")", "traceparent: \(Self.traceparent)"]
        )
        let entry = try #require(loggedEntry(server, id: "log-1"))
        #expect(entry["route"] as? String == "/sequences/{name}")
        #expect(entry["path"] as? String == "/sequences/fibonacci")
        #expect(entry["query"] as? String == "count=2&token=REDACTED&format=json")
        #expect(entry["remote"] as? String == "127.0.0.1")
        #expect(entry["user_agent"] as? String == "probe/1.0 (\"quoted\")")
        #expect(entry["trace_id"] as? String == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(entry["level"] as? String == "info")
        #expect(!server.log.lines.contains { $0.contains("s3cret") })

        // No traceparent: Spout starts a trace, and logs its id.
        _ = try server.get("/health", headers: ["X-Request-ID: log-2"])
        let started = try #require(loggedEntry(server, id: "log-2"))
        let traceID = try #require(started["trace_id"] as? String)
        #expect(traceID.count == 32 && traceID != "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(started["query"] == nil)
        await server.stop()
    }

    @Test func anUnmatchedAndAMethodNotAllowedRequestAreLoggedUnderTheirRoute() async throws {
        let server = try SpoutTestServer()
        let client = try server.connect()
        try client.send("DELETE /sequences/fibonacci HTTP/1.1\r\nHost: x\r\nX-Request-ID: del-1\r\n\r\n")
        #expect(try client.readResponse().status == 405)
        _ = try server.get("/missing", headers: ["X-Request-ID: miss-1"])
        #expect(try #require(loggedEntry(server, id: "del-1"))["route"] as? String == "/sequences/{name}")
        #expect(try #require(loggedEntry(server, id: "miss-1"))["route"] as? String == "unmatched")
        let metrics = server.service.metrics
        #expect(metrics.requests.value(["/sequences/{name}", "405"]) == 1)
        #expect(metrics.requests.value(["unmatched", "405"]) == 0)
        #expect(metrics.requests.value(["unmatched", "404"]) == 1)
        await server.stop()
    }

    @Test func anUpstreamFailureIsLoggedWithItsCause() async throws {
        let upstream = try UpstreamFixture { _ in .status(503) }
        defer { upstream.stop() }
        let server = try RouteTest.server(upstream: upstream) {
            $0.upstream.attempts = 2; $0.upstream.baseDelayMilliseconds = 0
        }
        let response = try server.get("/articles/1", headers: ["X-Request-ID: up-1"])
        #expect(response.status == 502)
        let entry = try #require(loggedEntry(server, id: "up-1"))
        let cause = try #require(entry["upstream"] as? [String: Any])
        #expect(cause["error"] as? String == "status")
        #expect(cause["status"] as? Int == 503)
        #expect(cause["attempts"] as? Int == 2)
        #expect((cause["url"] as? String)?.hasSuffix("/posts/1") == true)
        await server.stop()
    }

    @Test func theRemoteAddressOfAnIPv6ClientIsLogged() async throws {
        let server: SpoutTestServer
        do {
            server = try SpoutTestServer { $0.host = "::1" }
        } catch {
            return  // no IPv6 loopback on this machine
        }
        let client = try LoopbackClient(port: server.port, host: "::1")
        try client.sendGet("/health", headers: ["X-Request-ID: v6-1"])
        #expect(try client.readResponse().status == 200)
        #expect(try #require(loggedEntry(server, id: "v6-1"))["remote"] as? String == "::1")
        await server.stop()
    }

    @Test func theRequestContextHandsTheUpstreamItsCorrelationHeaders() throws {
        let correlation = RequestCorrelation(requestID: "r-1", traceparent: Self.traceparent, tracestate: "a=1")
        let headers = correlation.correlationHeaders
        #expect(headers["X-Request-ID"] == "r-1")
        #expect(headers["tracestate"] == "a=1")
        let forwarded = try #require(TraceParent(headers["traceparent"] ?? ""))
        #expect(forwarded.traceID == (0x4bf9_2f35_77b3_4da6, 0xa3ce_929d_0e0e_4736))
        #expect(forwarded.parentID == correlation.spanID)
    }
}

/// What `/metrics` shows beyond the request counts: the process, the build, series present from the start,
/// and the demo upstream's own calls left out.
@Suite(.offPool) struct ExpositionServiceTests {
    @Test func processBuildAndPreinitialisedSeriesAreExposed() async throws {
        let server = try SpoutTestServer()
        let text = try server.get("/metrics").text
        for reason in StreamEnd.allCases {
            #expect(text.contains("spout_streams_ended_total{reason=\"\(reason.rawValue)\"} 0\n"), "\(reason)")
        }
        for outcome in UpstreamOutcome.allCases {
            #expect(text.contains("spout_upstream_requests_total{outcome=\"\(outcome.rawValue)\"} 0\n"), "\(outcome)")
        }
        for result in CacheLookup.allCases {
            #expect(text.contains("spout_upstream_cache_total{result=\"\(result.rawValue)\"} 0\n"), "\(result)")
        }
        #expect(
            text.contains("spout_build_info{version=\"\(BuildInfo.version)\",revision=\"\(BuildInfo.revision)\"} 1\n")
        )
        func value(_ name: String) -> Double? {
            text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap {
                Double($0.split(separator: " ")[1])
            }
        }
        let resident = try #require(value("process_resident_memory_bytes"))
        let virtual = try #require(value("process_virtual_memory_bytes"))
        #expect(resident > 1_000_000 && virtual >= resident)
        let openFDs = try #require(value("process_open_fds"))
        let maxFDs = try #require(value("process_max_fds"))
        #expect(openFDs >= 3 && (maxFDs == -1 || openFDs <= maxFDs))
        #expect(try #require(value("process_cpu_seconds_total")) > 0)
        let start = try #require(value("process_start_time_seconds"))
        let now = Date().timeIntervalSince1970
        #expect(start <= now + 1 && start > now - 86_400 * 7, "started \(now - start) s ago")
        #expect(text.contains("# TYPE process_cpu_seconds_total counter\n"))
        await server.stop()
    }

    @Test func openDescriptorsFollowTheConnections() async throws {
        let server = try SpoutTestServer()
        func openFDs() throws -> Int {
            let text = try server.get("/metrics").text
            let line = try #require(text.split(separator: "\n").first { $0.hasPrefix("process_open_fds ") })
            return Int(line.split(separator: " ")[1]) ?? -1
        }
        // The count is process-wide and other suites open and close descriptors meanwhile, so a difference of
        // two readings proves nothing. What holds regardless: while these 20 connections are open, this process
        // has their 20 client sockets and the server's 20 accepted ones, besides stdin, stdout and stderr.
        let clients = try (0..<20).map { _ in try server.connect() }
        for client in clients {
            try client.sendGet("/health")
            #expect(try client.readResponse().status == 200)
        }
        #expect(try openFDs() >= 3 + 2 * clients.count)
        for client in clients { client.close() }
        await server.stop()
    }

    @Test func theDemoUpstreamsOwnCallsAreNotClientTraffic() async throws {
        let server = try SpoutTestServer { $0.log.selfCalls = false }  // the default outside tests
        #expect(try server.get("/articles/1", headers: ["X-Request-ID: art-1"]).status == 200)
        #expect(try server.get("/users/1/profile").status == 200)
        // The service called /demo/posts/1, /demo/users/1 and /demo/users/1/posts itself: none of it counts.
        let metrics = server.service.metrics
        #expect(eventually { metrics.requests.value(["/articles/{id}", "200"]) == 1 })
        #expect(metrics.requests.value(["/demo/posts/{id}", "200"]) == 0)
        #expect(metrics.requests.value(["/demo/users/{id}", "200"]) == 0)
        #expect(!server.log.lines.contains { $0.contains("\"path\":\"/demo/") })

        // A client sending the header cannot hide: a wrong token counts, and so does the right one elsewhere.
        #expect(
            try server.get("/demo/posts/1", headers: ["\(SelfCall.headerName): \(String(repeating: "0", count: 32))"])
                .status == 200
        )
        #expect(try server.get("/health", headers: ["\(SelfCall.headerName): \(SelfCall.token)"]).status == 200)
        #expect(eventually { metrics.requests.value(["/demo/posts/{id}", "200"]) == 1 })
        #expect(metrics.requests.value(["/health", "200"]) == 1)
        #expect(eventually { server.log.lines.contains { $0.contains("\"path\":\"/demo/posts/1\"") } })
        #expect(SpoutConfiguration().log.selfCalls == false)
        await server.stop()
    }

    @Test func selfCallsCountWhenConfiguredTo() async throws {
        let server = try SpoutTestServer { $0.log.selfCalls = true }
        #expect(try server.get("/articles/2").status == 200)
        #expect(eventually { server.service.metrics.requests.value(["/demo/posts/{id}", "200"]) == 1 })
        await server.stop()
    }

    @Test func theSelfCallCheckNeedsPathTokenAndLoopback() {
        #expect(SelfCall.isSelfCall(path: "/demo/posts/1", remoteAddress: "127.0.0.1", headerValue: SelfCall.token))
        #expect(SelfCall.isSelfCall(path: "/demo/posts/1", remoteAddress: "::1", headerValue: SelfCall.token))
        #expect(!SelfCall.isSelfCall(path: "/demo/posts/1", remoteAddress: "10.0.0.7", headerValue: SelfCall.token))
        #expect(!SelfCall.isSelfCall(path: "/articles/1", remoteAddress: "127.0.0.1", headerValue: SelfCall.token))
        #expect(!SelfCall.isSelfCall(path: "/demo/posts/1", remoteAddress: "127.0.0.1", headerValue: nil))
        #expect(
            !SelfCall.isSelfCall(path: "/demo/posts/1", remoteAddress: "127.0.0.1", headerValue: SelfCall.token + "0")
        )
        #expect(
            !SelfCall.isSelfCall(
                path: "/demo/posts/1",
                remoteAddress: "127.0.0.1",
                headerValue: String(SelfCall.token.reversed())
            )
        )
    }
}
