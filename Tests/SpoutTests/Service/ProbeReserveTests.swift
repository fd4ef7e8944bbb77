import Foundation
import HTTPServer
import TestSupport
import Testing

@testable import Spout

/// `probeConnections`: a server at `maxConnections` still answers its liveness and readiness probes (and
/// `/metrics`) on a few connections kept for them, so an orchestrator does not restart a pod that is merely
/// full; everything else there gets `503` with `Retry-After`, as beyond the reserve.
@Suite(.offPool) struct ProbeReserveTests {
    /// A server at its limit of two connections, both accepted and served (so the server counted them).
    static func fullServer(probeConnections: Int) throws -> (SpoutTestServer, [LoopbackClient]) {
        let server = try SpoutTestServer {
            $0.maxConnections = 2
            $0.probeConnections = probeConnections
        }
        let held = try (0..<2).map { _ in try server.connect() }
        for client in held {
            try client.sendGet("/health")
            #expect(try client.readResponse().status == 200)
        }
        return (server, held)
    }

    @Test func aFullServerAnswersItsProbesOnTheReserve() async throws {
        let (server, held) = try Self.fullServer(probeConnections: 8)
        #expect(server.service.connectionLimit.probeReserve == 8)
        for path in ["/health", "/ready", "/metrics"] {
            let probe = try server.connect()
            try probe.sendGet(path)
            let response = try probe.readResponse()
            #expect(response.status == 200, "\(path): \(response)")
            // One request per reserve connection: it closes after the answer and frees its slot.
            #expect(response.header("Connection")?.lowercased() == "close", "\(path)")
            #expect(probe.waitForClose(), "\(path)")
        }
        // HEAD is a probe too.
        let head = try server.connect()
        try head.send("HEAD /ready HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try head.readResponse(isHead: true).status == 200)
        for client in held { client.close() }
        await server.stop()
    }

    @Test func everythingElseOnTheReserveIs503WithRetryAfter() async throws {
        let (server, held) = try Self.fullServer(probeConnections: 8)
        for request in [
            "GET /sequences HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
            "POST /channels/a/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n",
            "DELETE /health HTTP/1.1\r\nHost: x\r\n\r\n",
        ] {
            let client = try server.connect()
            try client.send(request)
            let response = try client.readResponse()
            #expect(response.status == 503, "\(request): \(response)")
            #expect(response.header("Retry-After") == "1", "\(request)")
            #expect(response.header("Connection")?.lowercased() == "close", "\(request)")
            // Refused after its head was read (a problem, like the service's other 503s), not at accept.
            #expect(response.header("Content-Type") == "application/problem+json", "\(request)")
            #expect(client.waitForClose(), "\(request)")
        }
        for client in held { client.close() }
        await server.stop()
    }

    @Test func beyondTheReserveEveryConnectionIsRefusedAtAccept() async throws {
        let (server, held) = try Self.fullServer(probeConnections: 1)
        let reserved = try server.connect()  // takes the one reserve slot (accepted before the next)
        let beyond = try server.connect()
        let refused = try beyond.readResponse()
        #expect(refused.status == 503)
        #expect(refused.header("Retry-After") == "1")
        #expect(refused.header("Content-Type")?.hasPrefix("text/plain") == true, "refused without reading")
        try reserved.sendGet("/ready")
        #expect(try reserved.readResponse().status == 200)
        for client in held { client.close() }
        await server.stop()
    }

    @Test func withoutAReserveProbesOfAFullServerAre503() async throws {
        let (server, held) = try Self.fullServer(probeConnections: 0)
        let probe = try server.connect()
        try? probe.sendGet("/health")
        #expect(try probe.readResponse().status == 503)
        for client in held { client.close() }
        await server.stop()
    }
}
