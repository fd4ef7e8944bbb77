import Foundation
import Sequences
import TestSupport
import Testing

@testable import Spout

/// The client's read rate is the producer's demand: shown over real loopback sockets.
@Suite(.offPool) struct BackpressureTests {
    /// Waits until the probe's count stops changing over `samples` consecutive looks.
    private func settled(_ probe: SequenceProbe, samples: Int = 20) -> Int? {
        var last = probe.produced
        var stable = 0
        let signal = TestSignal()
        let done = eventually(timeout: .seconds(20)) {
            _ = signal.wait(timeout: .milliseconds(10))
            let now = probe.produced
            stable = now == last ? stable + 1 : 0
            last = now
            return stable >= samples
        }
        return done ? last : nil
    }

    @Test func aStalledReaderPausesTheProducerAndResumesWithNoGap() async throws {
        let server = try SpoutTestServer()
        let stream = try StreamClient(port: server.port, path: "/sequences/naturals", receiveBufferBytes: 4096)
        let first = try stream.nextEvents(100)
        #expect(first.map(\.lastEventID) == (0..<100).map(String.init))
        let probe = try #require(server.sequenceProbes.first)

        // Stop reading: the kernel buffers fill, the writer stops being writable, demand stops.
        let paused = try #require(settled(probe))
        #expect(!probe.isCancelled)
        // Paused means paused: still the same count after another quiet spell.
        #expect(settled(probe) == paused)
        // Bounded: what was produced is what the client took plus what the socket buffers and one
        // window hold, not an ever-growing backlog.
        #expect(paused < 100 + 1_000_000)

        // Resume: every index in order, no gap, no repeat, well past the pause point.
        let resumed = try stream.nextEvents(paused + 10_000 - 100)
        #expect(resumed.first?.lastEventID == "100")
        var expected = 100
        var inOrder = true
        for event in resumed {
            if event.lastEventID != String(expected) || event.data != String(expected) { inOrder = false }
            expected += 1
        }
        #expect(inOrder)
        #expect(probe.produced > paused)
        stream.close()
        #expect(eventually { probe.isCancelled })
        #expect(server.isHealthy())
        await server.stop()
    }

    @Test func aReaderThatReadsNothingIsCutForAWriteStallNotCountedAsGone() async throws {
        let server = try SpoutTestServer { $0.limits.writeStallTimeoutSeconds = 0.5 }
        let stream = try StreamClient(port: server.port, path: "/sequences/naturals", receiveBufferBytes: 4096)
        #expect(try stream.nextEvents(10).count == 10)
        // It stops reading and stays connected: the buffers fill, nothing moves, and after the stall time the
        // server cuts it.
        #expect(eventually(timeout: .seconds(30)) { server.service.metrics.streamsEnded.value(["write_stall"]) == 1 })
        #expect(eventually { server.log.lines.contains { $0.contains(#""end":"write_stall""#) } })
        #expect(server.service.metrics.streamsEnded.value(["client_gone"]) == 0)
        #expect(server.service.metrics.activeStreams.value == 0)
        stream.close()
        #expect(server.isHealthy())
        await server.stop()
    }

    @Test func aThousandSlowReadersAreServedFairly() async throws {
        let server = try SpoutTestServer()
        var streams: [StreamClient] = []
        for _ in 0..<1000 {
            streams.append(
                try StreamClient(port: server.port, path: "/sequences/naturals?count=200", receiveBufferBytes: 4096)
            )
        }
        // Each reader takes small bites in turn; every one must keep getting its events in order.
        var rounds = 0
        while streams.contains(where: { $0.events.count < 20 }) && rounds < 200 {
            for stream in streams where stream.events.count < 20 {
                try stream.pumpSlowly(bytes: 256)
            }
            rounds += 1
        }
        #expect(streams.allSatisfy { $0.events.count >= 20 })
        #expect(
            streams.allSatisfy { stream in
                stream.events.prefix(20).map(\.lastEventID) == (0..<20).map(String.init)
            }
        )
        #expect(server.sequenceProbes.count == 1000)
        for stream in streams { stream.close() }
        #expect(eventually { server.service.metrics.activeStreams.value == 0 })
        #expect(server.isHealthy())
        await server.stop()
    }

    @Test func pacedStreamsDripAndIdleStreamsGetHeartbeats() async throws {
        let server = try SpoutTestServer { $0.sse.heartbeatSeconds = 0.05 }
        let paced = try StreamClient(port: server.port, path: "/sequences/fibonacci?count=4&interval=5")
        let events = try paced.remainingEvents()
        #expect(events.map(\.data) == ["0", "1", "1", "2", #"{"reason":"completed"}"#])
        paced.close()

        // The first element goes out at once; the next is due in a minute, so the only thing that can arrive
        // meanwhile is the keep-alive comment.
        let idle = try StreamClient(port: server.port, path: "/sequences/naturals?count=2&interval=60000")
        while idle.comments.isEmpty { try idle.pump() }
        #expect(idle.comments.first == "keep-alive")
        #expect(idle.events.map(\.data) == ["0"])
        idle.close()
        #expect(eventually { server.service.metrics.streamsEnded.value(["client_gone"]) == 1 })
        #expect(server.service.metrics.activeStreams.value == 0)
        #expect(server.isHealthy())
        await server.stop()
    }

    @Test func shutdownEndsStreamsWithAFinalFrameAndReadinessDrops() async throws {
        let server = try SpoutTestServer()
        let stream = try StreamClient(port: server.port, path: "/sequences/naturals?interval=1")
        _ = try stream.nextEvents(3)
        let stopping = Task { await server.stop() }
        let rest = try stream.remainingEvents(timeout: .seconds(15))
        #expect(rest.last?.type == "end")
        #expect(rest.last?.data == #"{"reason":"shutdown"}"#)
        await stopping.value
        #expect(server.service.readiness.current == .draining)
        #expect(server.service.metrics.streamsEnded.value(["shutdown"]) == 1)
        stream.close()
    }
}
