import Foundation
import TestSupport
import Testing

@testable import Spout

/// The problems upstream failures produce, seen by a client: each `type` is catalogued and resolves to its
/// page, and no body carries the upstream's address (`http://127.0.0.1:<port>/…`): that is configuration, kept
/// for the log; the client gets the resource path at most.
@Suite(.offPool) struct ProblemBodyTests {
    /// The routes that call the upstream and answer with a complete body.
    static let routes = [
        "/articles/1", "/articles?userId=1", "/users/1/profile", "/dashboard/1", "/workflow/1?format=json",
    ]

    /// Checks every route's answer under `reply` and returns the statuses seen.
    static func expectNoAddressInProblems(
        _ reply: UpstreamFixture.Reply,
        configure: @escaping (inout SpoutConfiguration) -> Void = { _ in }
    ) async throws -> [Int] {
        let fixture = try UpstreamFixture { _ in reply }
        defer { fixture.stop() }
        let server = try RouteTest.server(upstream: fixture, attemptTimeoutSeconds: 1, configure)
        let address = try #require(fixture.baseURL.host)
        let port = try #require(fixture.baseURL.port)
        var statuses: [Int] = []
        for path in routes {
            let response = try server.get(path, timeout: .seconds(20))
            statuses.append(response.status)
            guard response.status >= 400 else { continue }
            #expect(response.header("Content-Type") == Problem.mediaType, "\(path)")
            let text = String(decoding: response.body, as: UTF8.self)
            for leak in ["http://", "https://", address, "localhost", ":\(port)"] {
                #expect(!text.contains(leak), "\(path) answered \(text)")
            }
            let type = try #require(RouteTest.object(response.body)["type"] as? String, "\(path): \(text)")
            #expect(ProblemType.named(uri: type) != nil, "\(path): \(type)")
            let page = try server.get(type)
            #expect(page.status == 200, "\(type)")
            #expect(page.header("Content-Type")?.hasPrefix("text/html") == true)
        }
        #expect(server.isHealthy())
        await server.stop()
        return statuses
    }

    @Test func anUpstreamErrorStatusNamesTheResourceNotTheAddress() async throws {
        let statuses = try await Self.expectNoAddressInProblems(.respond(status: 500, headers: [:], body: "boom"))
        #expect(statuses.allSatisfy { $0 == 502 }, "\(statuses)")
    }

    @Test func anUpstreamNotFoundNamesTheResourceNotTheAddress() async throws {
        let statuses = try await Self.expectNoAddressInProblems(.respond(status: 404, headers: [:], body: "{}"))
        // `/articles?userId=` lists nothing rather than failing; every other route reports the missing record.
        #expect(statuses.contains(404), "\(statuses)")
    }

    @Test func anUpstreamBodyOverTheLimitNamesTheLimitNotTheAddress() async throws {
        let statuses = try await Self.expectNoAddressInProblems(.large(bytes: 1 << 20)) { configuration in
            configuration.upstream.maxBodyBytes = 64 * 1024
        }
        #expect(statuses.allSatisfy { $0 == 502 }, "\(statuses)")
    }

    @Test func anUpstreamThatDoesNotAnswerIsATimeoutWithoutTheAddress() async throws {
        let statuses = try await Self.expectNoAddressInProblems(.hang) { configuration in
            configuration.upstream.deadlineSeconds = 1
        }
        #expect(statuses.allSatisfy { $0 == 504 }, "\(statuses)")
    }
}
