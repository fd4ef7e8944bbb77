import Dispatch
import EventLoops
import TestSupport
import Testing

@testable import HTTPServer

/// A loop's coarse timer runs only while the loop has connections (and pages to give back): an idle server
/// must not wake Dispatch, or Dispatch's idle worker threads never reach their 5 s exit timeout.
@Suite(.offPool) struct IdleLoopTimerTests {
    /// Short timeouts make the tick 10 ms.
    private func makeServer() throws -> TestServer {
        try TestServer(configuration: {
            $0.idleTimeout = .milliseconds(300)
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
        let server = try makeServer()
        defer { server.stop() }
        let first = try server.connect()
        try first.sendGet("/health")
        #expect(try first.readResponse().status == 200)
        first.close()
        #expect(eventually(server) { $0 == 0 })
        // The idle timeout needs the timer: the connection is closed only if it came back.
        let second = try server.connect()
        try second.sendGet("/health")
        #expect(try second.readResponse().status == 200)
        #expect(second.waitForClose(timeout: .seconds(5)))
        try server.expectHealthy()
    }
}
