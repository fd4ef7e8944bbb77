import Foundation
import HTTPServer
import TestSupport
import Testing

@testable import Spout

/// A request whose head is over the server's limits (a request line over 8192 bytes, header fields over
/// `limits.maxHeaderBytes` or `limits.maxHeaderCount`) is refused before routing with a `request-head-too-large`
/// problem (`414` or `431`, as the OpenAPI document lists on every operation) and a close; crowds of them leave
/// no connection open and the service answering.
@Suite(.offPool) struct RequestHeadRefusalTests {
    /// The refusals, each as the raw request that earns it and its status.
    static let refusals: [(request: String, status: Int)] = [
        (
            "GET /sequences/fibonacci?count=3&pad=\(String(repeating: "a", count: 9_000)) HTTP/1.1\r\nHost: x\r\n\r\n",
            414
        ),
        ("GET /articles/1 HTTP/1.1\r\nHost: x\r\nX-Pad: \(String(repeating: "b", count: 17_000))\r\n\r\n", 431),
        (
            "GET /channels/a/latest HTTP/1.1\r\nHost: x\r\n"
                + (0..<101).map { "X-Field-\($0): v\r\n" }.joined() + "\r\n",
            431
        ),
    ]

    @Test(arguments: [1, 8, 30])
    func overLongHeadsAreProblemsAndLeaveNothingOpen(crowd: Int) async throws {
        let server = try SpoutTestServer()
        for (request, status) in Self.refusals {
            // All of the crowd connected and sent before any answer is read, so the server holds them at once.
            let clients = try (0..<crowd).map { _ in try server.connect() }
            for client in clients { try client.send(request) }
            for client in clients {
                let response = try client.readResponse()
                #expect(response.status == status, "\(response)")
                #expect(response.header("Content-Type") == Problem.mediaType)
                #expect(response.header("Connection")?.lowercased() == "close")
                let body = RouteTest.object(response.body)
                #expect(body["type"] as? String == ProblemType.requestHeadTooLarge.uri, "\(body)")
                #expect(body["status"] as? Int == status)
                #expect((body["detail"] as? String)?.isEmpty == false)
                #expect(client.waitForClose())
                client.close()
            }
        }
        // The server closed every one of them, and goes on serving.
        #expect(eventually { server.service.server._openConnectionCount() == 0 })
        #expect(server.isHealthy())
        let page = try server.get(ProblemType.requestHeadTooLarge.uri)
        #expect(page.status == 200)
        #expect(page.text.contains("limits.maxHeaderBytes"))
        await server.stop()
    }
}
