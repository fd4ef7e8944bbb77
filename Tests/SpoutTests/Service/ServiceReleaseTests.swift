import Dispatch
import EventLoops
import HTTPServer
import TestSupport
import Testing

@testable import Spout

/// A service that has been shut down is freed: its loops, metrics, routes and upstream client go with it.
/// (The server's loop contexts held the server through their connection-closed callback, and the server held
/// them, so every stopped test service used to stay in memory whole; AddressSanitizer's leak check counted
/// about 900 KB of such graphs per run.)
@Suite(.offPool) struct ServiceReleaseTests {
    /// Weak references to the parts of a service that only it keeps.
    struct Parts {
        weak var group: EventLoopGroup?
        weak var loop: EventLoop?
        weak var metrics: SpoutMetrics?
        weak var readiness: Readiness?

        var released: Bool { group == nil && loop == nil && metrics == nil && readiness == nil }
    }

    /// Starts a service, has it answer `paths` on one connection, closes that, shuts the service down (with the
    /// force-close timer of the grace period still pending) and lets go of it; returns weak references to what
    /// it owned.
    static func serveAndShutDown(_ paths: [String], grace: Double) async throws -> Parts {
        let server = try SpoutTestServer { $0.shutdown.graceSeconds = grace }
        let client = try server.connect()
        for path in paths {
            try client.sendGet(path)
            let response = try client.readResponse()
            #expect(response.status == 200, "\(path)")
        }
        let parts = Parts(
            group: server.service.eventLoopGroup,
            loop: server.service.eventLoopGroup.loops.first,
            metrics: server.service.metrics,
            readiness: server.service.readiness
        )
        #expect(!parts.released)
        client.close()
        await server.stop()
        return parts
    }

    @Test func aStoppedServiceIsFreed() async throws {
        // A long grace period: what is freed must not wait for the force-close timer.
        let parts = try await Self.serveAndShutDown(["/health", "/metrics", "/sequences"], grace: 60)
        #expect(eventually(timeout: .seconds(5)) { parts.released })
    }

    @Test func aServiceThatCalledItsUpstreamIsFreed() async throws {
        // The demo upstream is the service itself: this goes through the URLSession lanes and the cache.
        let parts = try await Self.serveAndShutDown(["/articles", "/articles/1"], grace: 60)
        #expect(eventually(timeout: .seconds(5)) { parts.released })
    }
}
