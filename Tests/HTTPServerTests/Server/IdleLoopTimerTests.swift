import Dispatch
import EventLoops
import TestSupport
import Testing

@testable import HTTPServer

/// A loop's coarse timer runs only while the loop has connections (and pages to give back): an idle server
/// must not wake Dispatch, or Dispatch's idle worker threads never reach their 5 s exit timeout.
@Suite(.offPool) struct IdleLoopTimerTests {
    /// The 40 ms linger timeout makes the tick 10 ms whatever `idleTimeout` is. The idle timeout is long enough
    /// that a test thread held up between `connect` and its request (ThreadSanitizer on a loaded machine: CI saw
    /// it at 300 ms) still sends before the server closes the connection as idle; a request sent after that close
    /// is answered with a reset, which is not what these tests are about.
    private func makeServer(idleTimeout: Duration = .seconds(60)) throws -> TestServer {
        try TestServer(configuration: {
            $0.idleTimeout = idleTimeout
            $0.lingerTimeout = .milliseconds(40)
        })
    }

    /// Waits, one tick interval at a time (at most 200 of them), until `condition` holds.
    private func eventually(_ server: TestServer, _ condition: (Int) -> Bool) -> Bool {
        for _ in 0..<200 {
            if condition(server.server._tickingLoopCount()) { return true }
            let tick = TestSignal()
            server.server.group.loops[0].queue.asyncAfter(deadline: .now() + .milliseconds(10)) { tick.signal() }
            _ = tick.wait(timeout: .seconds(1))
        }
        return false
    }

    @Test func idleServerHasNoTimerRunning() throws {
        let server = try makeServer()
        defer { server.stop() }
        #expect(server.server._tickingLoopCount() == 0)
    }

    @Test func timerRunsWithConnectionsAndStopsWhenTheyLeave() throws {
        let server = try makeServer()
        defer { server.stop() }
        let client = try server.connect()
        try client.sendGet("/health")
        #expect(try client.readResponse().status == 200)
        #expect(server.server._tickingLoopCount() == 1)
        client.close()
        #expect(eventually(server) { $0 == 0 }, "the timer kept running on an idle loop")
    }

    @Test func timerRestartsForTheNextConnectionAndItsTimeoutsStillFire() throws {
        let server = try makeServer(idleTimeout: .seconds(5))
        defer { server.stop() }
        let first = try server.connect()
        try first.sendGet("/health")
        #expect(try first.readResponse().status == 200)
        first.close()
        #expect(eventually(server) { $0 == 0 })
        // The idle timeout needs the timer: the connection, which sends nothing (so no request of its can be
        // cut), is closed only if the timer came back.
        let second = try server.connect()
        #expect(second.waitForClose(timeout: .seconds(30)))
        try server.expectHealthy()
    }
}
