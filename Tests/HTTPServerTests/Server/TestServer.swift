import Dispatch
import EventLoops
import HTTPServer
import TestSupport
import Testing

/// A server on 127.0.0.1 port 0 for one test; `/health` always answers `200 ok`.
struct TestServer {
    let server: Server

    var port: Int { server.port }

    /// Starts a server with `handler` (trailing closure) for every request but `/health`.
    init(host: String = "127.0.0.1", _ handler: @escaping Server.Handler) throws {
        try self.init(host: host, configuration: { _ in }, handler: handler)
    }

    /// Starts a server. `handler` sees every request but `/health` (default: `/echo` echoes, else 404).
    init(
        host: String = "127.0.0.1",
        configuration configure: (inout Server.Configuration) -> Void = { _ in },
        handler: Server.Handler? = nil
    ) throws {
        var configuration = Server.Configuration(host: host, port: 0)
        configure(&configuration)
        let custom = handler ?? TestServer.echo
        server = try Server.start(configuration: configuration, group: EventLoopGroup(loopCount: 2)) {
            request,
            responder in
            if request.path == "/health" {
                responder.respond(headers: ["Content-Type": "text/plain"], body: "ok")
            } else {
                custom(request, responder)
            }
        }
    }

    static let echo: Server.Handler = { request, responder in
        if request.path == "/echo" {
            responder.respond(headers: ["Content-Type": "application/octet-stream"], body: request.body)
        } else {
            responder.respond(status: .notFound, body: "not found")
        }
    }

    /// A new client connected to this server.
    func connect(host: String = "127.0.0.1", receiveBufferBytes: Int? = nil) throws -> LoopbackClient {
        try LoopbackClient(port: port, host: host, receiveBufferBytes: receiveBufferBytes)
    }

    /// Checks, on a new connection, that the server still answers `GET /health`.
    func expectHealthy(host: String = "127.0.0.1", sourceLocation: SourceLocation = #_sourceLocation) throws {
        let client = try connect(host: host)
        try client.sendGet("/health")
        let response = try client.readResponse()
        #expect(response.status == 200, sourceLocation: sourceLocation)
        #expect(response.text == "ok", sourceLocation: sourceLocation)
    }

    /// Whether a new connection gets `GET /health` answered, trying up to 200 times: after clients close, the
    /// server counts the closes asynchronously, so a free slot may take a moment to show.
    func servesAgain() throws -> Bool {
        for _ in 0..<200 {
            let client = try connect()
            try client.sendGet("/health")
            if (try? client.readResponse())?.status == 200 { return true }
        }
        return false
    }

    /// Shuts down and waits (bounded) for completion.
    func stop(deadline: Duration = .seconds(2), sourceLocation: SourceLocation = #_sourceLocation) {
        let done = TestSignal()
        server.shutdown(deadline: deadline) { done.signal() }
        #expect(done.wait(timeout: deadline + .seconds(5)), "shutdown did not complete", sourceLocation: sourceLocation)
    }
}
