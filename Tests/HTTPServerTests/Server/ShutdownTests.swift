import EventLoops
import HTTPServer
import TestSupport
import Testing

@Suite(.offPool) struct ShutdownTests {
    @Test func inFlightRequestCompletesDuringGracefulShutdown() throws {
        let received = TestSignal()
        let held = TestBox<[Responder]>([])
        let server = try TestServer { _, responder in
            held.update { $0.append(responder) }
            received.signal()
        }
        let client = try server.connect()
        try client.sendGet("/work")
        #expect(received.wait())
        try server.expectHealthy()

        let done = TestSignal()
        server.server.shutdown(deadline: .seconds(10)) { done.signal() }
        let responder = held.value[0]
        responder.loop.execute { responder.respond(body: "finished") }
        // Whether the answer or the shutdown reaches the loop first, the answer arrives whole and the
        // connection closes after it (with `Connection: close` when the shutdown came first).
        let response = try client.readResponse()
        #expect(response.text == "finished")
        #expect(client.waitForClose())
        client.close()
        #expect(done.wait())
        #expect((try? server.connect()) == nil)  // the listener is gone
    }

    @Test func streamGetsOnShutdownAndItsFinalFrameReachesTheClient() throws {
        let started = TestSignal()
        let server = try TestServer { _, responder in
            let writer = responder.startStreaming(headers: ["Content-Type": "text/event-stream"])
            writer.write("data: tick\n\n")
            writer.onShutdown = {
                writer.write("event: end\ndata: bye\n\n")
                writer.finish()
            }
            started.signal()
        }
        let client = try server.connect()
        try client.sendGet("/stream")
        #expect(started.wait())
        _ = try client.readResponse(isHead: true)
        #expect(try client.readChunk() == Array("data: tick\n\n".utf8))
        try server.expectHealthy()

        let done = TestSignal()
        server.server.shutdown(deadline: .seconds(10)) { done.signal() }
        #expect(try client.readChunk() == Array("event: end\ndata: bye\n\n".utf8))
        #expect(try client.readChunk().isEmpty)
        #expect(client.waitForClose())
        client.close()  // otherwise the server lingers for the peer's close until its linger timeout
        #expect(done.wait())
    }

    @Test func idleKeepAliveConnectionsAreClosedAndTheDeadlineForcesTheRest() async throws {
        let received = TestSignal()
        let server = try TestServer { _, _ in received.signal() }  // never answers
        let idle = try server.connect()
        try idle.sendGet("/health")
        #expect(try idle.readResponse().status == 200)
        let stuck = try server.connect()
        try stuck.sendGet("/never")
        #expect(received.wait())

        await server.server.shutdown(deadline: .milliseconds(300))
        #expect(idle.waitForClose())
        #expect(stuck.waitForClose())
    }

    @Test func shutdownTwiceCompletesBoth() throws {
        let server = try TestServer()
        try server.expectHealthy()
        let first = TestSignal()
        let second = TestSignal()
        server.server.shutdown { first.signal() }
        server.server.shutdown { second.signal() }
        #expect(first.wait())
        #expect(second.wait())
        let third = TestSignal()
        server.server.shutdown { third.signal() }
        #expect(third.wait())
    }
}

/// A server that has stopped is freed with its loops and its handler (nothing of its own holds it any more),
/// even while the force-close timer of a long grace period is pending.
@Suite(.offPool) struct StoppedServerReleaseTests {
    final class HandlerToken: Sendable {}

    struct Parts {
        weak var server: Server?
        weak var group: EventLoopGroup?
        weak var handlerToken: HandlerToken?

        var released: Bool { server == nil && group == nil && handlerToken == nil }
    }

    /// Serves one request, closes the connection, shuts down, and lets go of everything.
    static func serveAndShutDown() throws -> Parts {
        let token = HandlerToken()
        let server = try Server.start(
            configuration: .init(host: "127.0.0.1", port: 0),
            group: EventLoopGroup(loopCount: 2)
        ) {
            _,
            responder in
            _ = token
            responder.respond(headers: ["Content-Type": "text/plain"], body: "ok")
        }
        let client = try LoopbackClient(port: server.port)
        try client.sendGet("/")
        #expect(try client.readResponse().text == "ok")
        client.close()
        let done = TestSignal()
        server.shutdown(deadline: .seconds(60)) { done.signal() }
        #expect(done.wait())
        return Parts(server: server, group: server.group, handlerToken: token)
    }

    @Test func aStoppedServerIsFreed() throws {
        let parts = try Self.serveAndShutDown()
        // Bounded: 1,000 looks 5 ms apart at most (scaled under sanitizers by TestSignal).
        var released = parts.released
        for _ in 0..<1_000 where !released {
            _ = TestSignal().wait(timeout: .milliseconds(5))
            released = parts.released
        }
        #expect(released)
    }
}
