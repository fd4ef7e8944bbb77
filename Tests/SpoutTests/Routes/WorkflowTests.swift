import Foundation
import TestSupport
import Testing

@testable import Spout

/// `/workflow/{userId}`: user → posts, todos and albums in parallel → comments of the latest post →
/// summary; streamed step by step, or the summary alone as JSON; cancelled when the client leaves.
@Suite(.offPool) struct WorkflowTests {
    private static let user = #"{"id":1,"name":"N","username":"n","email":"n@example.com"}"#

    @Test func eachStepIsAnEventAndTheSummaryComesLast() async throws {
        let server = try SpoutTestServer()
        let stream = try StreamClient(port: server.port, path: "/workflow/1")
        #expect(stream.header("Content-Type") == "text/event-stream")
        let all = try stream.remainingEvents()
        stream.close()
        // Ids on every event, and the final frame every stream ends with.
        #expect(all.map(\.type) == ["step", "step", "step", "step", "summary", "end"])
        #expect(all.map(\.lastEventID) == ["1", "2", "3", "4", "5", "5"])
        #expect(all.last?.data == #"{"reason":"completed"}"#)
        let events = Array(all.dropLast())
        let steps = events.dropLast().map { RouteTest.object($0.data) }
        #expect(steps.map { $0["name"] as? String } == ["user", "activity", "comments", "summary"])
        #expect(steps.map { $0["step"] as? Int } == [1, 2, 3, 4])
        #expect(steps.allSatisfy { ($0["durationMs"] as? Double).map { $0 >= 0 } == true })

        let data = DemoData.shared
        let posts = data.posts.filter { $0.userId == 1 }
        let latest = try #require(posts.max { $0.id < $1.id })
        let summary = RouteTest.object(try #require(events.last).data)
        #expect((summary["user"] as? [String: Any])?["name"] as? String == "Maren Holt")
        #expect(summary["posts"] as? Int == posts.count)
        #expect(summary["albums"] as? Int == data.albums.filter { $0.userId == 1 }.count)
        let todos = summary["todos"] as? [String: Any]
        #expect(todos?["open"] as? Int == data.todos.filter { $0.userId == 1 && !$0.completed }.count)
        #expect(todos?["completed"] as? Int == data.todos.filter { $0.userId == 1 && $0.completed }.count)
        let latestPost = summary["latestPost"] as? [String: Any]
        #expect(latestPost?["id"] as? Int == latest.id)
        #expect(latestPost?["comments"] as? Int == data.comments.filter { $0.postId == latest.id }.count)
        #expect((summary["steps"] as? [Any])?.count == 3)
        #expect(eventually { server.service.metrics.streamsEnded.value(["completed"]) == 1 })
        await server.stop()
    }

    @Test func jsonClientsGetTheSummaryAlone() async throws {
        let server = try SpoutTestServer()
        let response = try server.get("/workflow/2", headers: ["Accept: application/json"])
        #expect(response.status == 200)
        #expect(response.header("Content-Type") == "application/json")
        let summary = RouteTest.object(response.body)
        #expect((summary["user"] as? [String: Any])?["id"] as? Int == 2)
        #expect(summary["posts"] as? Int == DemoData.shared.posts.filter { $0.userId == 2 }.count)

        let ndjson = try StreamClient(port: server.port, path: "/workflow/2?format=ndjson")
        let lines = String(decoding: try ndjson.readToEnd(), as: UTF8.self).split(separator: "\n")
        ndjson.close()
        let names = lines.dropLast().map { RouteTest.object(String($0))["event"] as? String }
        #expect(names == ["step", "step", "step", "step", "summary"])
        #expect(lines.last == #"{"end":{"reason":"completed"}}"#)

        let missing = try server.get("/workflow/55", headers: ["Accept: application/json"])
        #expect(missing.status == 404)
        #expect(RouteTest.object(missing.body)["step"] as? String == "user")
        await server.stop()
    }

    @Test func theCommentsStepWaitsForTheActivityStep() async throws {
        let fixture = try UpstreamFixture { request in
            switch request.path {
            case "/users/1": .json(Self.user)
            case "/users/1/posts": .json(RouteTest.json(RouteTest.posts(from: 3, count: 4)))
            case "/posts/6/comments": .json(#"[{"postId":6,"id":1,"name":"c","email":"a@example.com","body":"b"}]"#)
            default: .delayed(.milliseconds(50), .json("[]"))
            }
        }
        defer { fixture.stop() }
        let server = try RouteTest.server(upstream: fixture)
        let response = try server.get("/workflow/1", headers: ["Accept: application/json"])
        #expect(response.status == 200)
        let log = fixture.snapshot.log
        #expect(log.first == "/users/1")
        #expect(log.last == "/posts/6/comments")
        #expect(Set(log.dropFirst().dropLast()) == ["/users/1/posts", "/users/1/todos", "/users/1/albums"])
        let latest = RouteTest.object(response.body)["latestPost"] as? [String: Any]
        #expect(latest?["id"] as? Int == 6)
        #expect(latest?["commenters"] as? [String] == ["a@example.com"])
        await server.stop()
    }

    @Test func aUserWithoutPostsSkipsTheCommentsStep() async throws {
        let fixture = try UpstreamFixture { request in
            request.path == "/users/1" ? .json(Self.user) : .json("[]")
        }
        defer { fixture.stop() }
        let server = try RouteTest.server(upstream: fixture)
        let stream = try StreamClient(port: server.port, path: "/workflow/1")
        let events = try stream.remainingEvents()
        stream.close()
        #expect(events.map(\.type) == ["step", "step", "step", "step", "summary", "end"])
        #expect(RouteTest.object(events[2].data)["skipped"] as? Bool == true)
        #expect(RouteTest.object(events[4].data)["latestPost"] is NSNull)
        #expect(fixture.snapshot.requests(toPath: "/posts") == 0)
        await server.stop()
    }

    @Test func aFailingStepEndsTheStreamWithAnErrorEventNamingIt() async throws {
        let fixture = try UpstreamFixture { request in
            switch request.path {
            case "/users/1": .json(Self.user)
            case "/users/1/albums": .status(500)
            default: .json("[]")
            }
        }
        defer { fixture.stop() }
        let server = try RouteTest.server(upstream: fixture)
        let stream = try StreamClient(port: server.port, path: "/workflow/1")
        let events = try stream.remainingEvents()
        stream.close()
        #expect(events.map(\.type) == ["step", "error"])
        let problem = RouteTest.object(events[1].data)
        #expect(problem["status"] as? Int == 502)
        #expect(problem["step"] as? String == "activity")
        #expect(problem["upstreamStatus"] as? Int == 500)
        #expect(problem["instance"] as? String == "/workflow/1")

        let json = try server.get("/workflow/1", headers: ["Accept: application/json"])
        #expect(json.status == 502)
        #expect(RouteTest.object(json.body)["step"] as? String == "activity")
        #expect(server.isHealthy())
        await server.stop()
    }

    @Test func aJSONClientThatLeavesBeforeTheSummaryCancelsTheOutstandingUpstreamRequests() async throws {
        let fixture = try UpstreamFixture { request in
            request.path == "/users/1" ? .json(Self.user) : .hang
        }
        defer { fixture.stop() }
        // Attempts may take 120 s: only cancellation can end the hanging requests within the waits below.
        let server = try RouteTest.server(upstream: fixture, attemptTimeoutSeconds: 120)
        let client = try LoopbackClient(port: server.port)
        try client.sendGet("/workflow/1", headers: ["Accept: application/json"])
        #expect(await fixture.waitUntil { $0.inFlight == 3 })
        client.close()
        #expect(await fixture.waitUntil(timeout: .seconds(10)) { $0.inFlight == 0 })
        #expect(fixture.snapshot.total == 4)
        #expect(server.isHealthy())
        await server.stop()
    }

    @Test func aClientThatLeavesMidWayCancelsTheOutstandingUpstreamRequests() async throws {
        let fixture = try UpstreamFixture { request in
            request.path == "/users/1" ? .json(Self.user) : .hang
        }
        defer { fixture.stop() }
        // Attempts may take 120 s: only cancellation can end the hanging requests within the waits below.
        let server = try RouteTest.server(upstream: fixture, attemptTimeoutSeconds: 120)
        let stream = try StreamClient(port: server.port, path: "/workflow/1")
        let first = try stream.nextEvents(1)
        #expect(first.map(\.type) == ["step"])
        #expect(await fixture.waitUntil { $0.inFlight == 3 })
        stream.close()
        #expect(await fixture.waitUntil(timeout: .seconds(10)) { $0.inFlight == 0 })
        let ends = server.service.metrics.streamsEnded
        #expect(
            eventually { ends.value(["client_gone"]) == 1 },
            "stream ends: \(StreamEnd.allCases.map { "\($0.rawValue)=\(ends.value([$0.rawValue]))" })"
        )
        #expect(fixture.snapshot.total == 4)
        #expect(server.isHealthy())
        await server.stop()
    }

    // MARK: Resuming with Last-Event-ID

    /// A reconnect after the summary (Last-Event-ID 5, what `EventSource` sends after the `end` frame) is
    /// `204`, which stops its reconnects, and costs the upstream nothing.
    @Test func resumingAfterTheSummaryIs204() async throws {
        let fixture = try UpstreamFixture { _ in .json("[]") }
        defer { fixture.stop() }
        let server = try RouteTest.server(upstream: fixture)
        for id in ["5", " 5 ", "17"] {
            let response = try server.get("/workflow/1", headers: ["Last-Event-ID: \(id)"])
            #expect(response.status == 204, "Last-Event-ID \(id)")
            #expect(response.body.isEmpty)
        }
        #expect(fixture.snapshot.total == 0)
        #expect(server.isHealthy())
        await server.stop()
    }

    /// A reconnect mid-workflow reruns it and sends only the events after the last one received; the
    /// finished steps' upstream calls come from the response cache, so the rerun costs the upstream only
    /// what had not been fetched.
    @Test func resumingMidWorkflowSendsOnlyTheLaterEventsAndReusesTheCachedSteps() async throws {
        let fixture = try UpstreamFixture { request in
            switch request.path {
            case "/users/1": .json(Self.user)
            case "/users/1/posts": .json(RouteTest.json(RouteTest.posts(from: 3, count: 2)))
            case "/posts/4/comments": .json(#"[{"postId":4,"id":1,"name":"c","email":"a@example.com","body":"b"}]"#)
            default: .json("[]")
            }
        }
        defer { fixture.stop() }
        let server = try RouteTest.server(upstream: fixture)
        let first = try StreamClient(port: server.port, path: "/workflow/1")
        let whole = try first.remainingEvents()
        first.close()
        #expect(whole.map(\.lastEventID) == ["1", "2", "3", "4", "5", "5"])
        let requests = fixture.snapshot.total
        #expect(requests == 5)

        let resumed = try StreamClient(port: server.port, path: "/workflow/1", headers: ["Last-Event-ID: 2"])
        #expect(resumed.status == 200)
        let rest = try resumed.remainingEvents()
        resumed.close()
        #expect(rest.map(\.type) == ["step", "step", "summary", "end"])
        #expect(rest.map(\.lastEventID) == ["3", "4", "5", "5"])
        #expect(RouteTest.object(rest[0].data)["name"] as? String == "comments")
        let summary = RouteTest.object(rest[2].data)
        #expect((summary["latestPost"] as? [String: Any])?["id"] as? Int == 4)
        #expect(fixture.snapshot.total == requests, "every step came from the cache")

        // Last-Event-ID 0 (nothing received yet) is the whole workflow again.
        let again = try StreamClient(port: server.port, path: "/workflow/1", headers: ["Last-Event-ID: 0"])
        #expect(try again.remainingEvents().map(\.lastEventID) == ["1", "2", "3", "4", "5", "5"])
        again.close()
        await server.stop()
    }

    @Test(arguments: ["abc", "-1", "", "1.5", "99999999999"])
    func aLastEventIDThatIsNoEventOfTheStreamIs400(id: String) async throws {
        let server = try SpoutTestServer()
        let response = try server.get("/workflow/1", headers: ["Last-Event-ID: \(id)"])
        #expect(response.status == 400)
        #expect(RouteTest.object(response.body)["parameter"] as? String == "Last-Event-ID")
        await server.stop()
    }

    /// Correlation fields of the request reach every upstream call of the workflow.
    @Test func correlationHeadersAreForwardedToEveryUpstreamCall() async throws {
        let fixture = try UpstreamFixture { request in
            request.path == "/users/1" ? .json(Self.user) : .json("[]")
        }
        defer { fixture.stop() }
        let server = try RouteTest.server(upstream: fixture)
        let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        let response = try server.get(
            "/workflow/1",
            headers: [
                "Accept: application/json", "X-Request-ID: wf-7", "traceparent: \(traceparent)", "tracestate: a=1",
            ]
        )
        #expect(response.status == 200)
        let sent = fixture.snapshot.headers
        #expect(sent.count == 4)
        for fields in sent {
            let value = { (name: String) in fields.first { $0.name.lowercased() == name }?.value }
            #expect(value("x-request-id") == "wf-7")
            // The same trace and flags; Spout's own span is the parent of each upstream call (W3C Trace Context).
            let forwarded = value("traceparent") ?? ""
            #expect(forwarded.hasPrefix("00-4bf92f3577b34da6a3ce929d0e0e4736-"))
            #expect(forwarded.hasSuffix("-01"))
            #expect(forwarded != traceparent)
            #expect(value("tracestate") == "a=1")
        }
        #expect(Set(sent.map { fields in fields.first { $0.name.lowercased() == "traceparent" }?.value }).count == 1)
        await server.stop()
    }
}
