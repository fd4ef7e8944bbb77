import Foundation
import Sequences
import TestSupport
import Testing

@testable import Spout

@Suite(.offPool) struct SequenceStreamTests {
    @Test func sseStreamHasHeadersRetryIdsAndAnEndEvent() async throws {
        let server = try SpoutTestServer()
        let stream = try StreamClient(port: server.port, path: "/sequences/fibonacci?count=12")
        #expect(stream.status == 200)
        #expect(stream.header("Content-Type") == "text/event-stream")
        #expect(stream.header("Cache-Control") == "no-cache")
        #expect(stream.header("X-Accel-Buffering") == "no")
        let events = try stream.remainingEvents()
        #expect(stream.retry == 3000)
        let expected = ["0", "1", "1", "2", "3", "5", "8", "13", "21", "34", "55", "89"]
        #expect(events.dropLast().map(\.data) == expected)
        #expect(events.dropLast().map(\.lastEventID) == (0..<12).map(String.init))
        #expect(events.last?.type == "end")
        #expect(events.last?.data == #"{"reason":"completed"}"#)
        stream.close()
        await server.stop()
    }

    @Test func bigValuesAreExact() async throws {
        let server = try SpoutTestServer()
        let stream = try StreamClient(port: server.port, path: "/sequences/fibonacci?start=1000&count=1")
        let value = try #require(try stream.nextEvents(1).first)
        #expect(value.lastEventID == "1000")
        #expect(value.data.count == 209)
        #expect(
            value.data.hasPrefix("43466557686937456435688527675040625802564660517371780402481729089536555417949051")
        )
        let json = try server.get("/sequences/fibonacci?start=93&count=1&format=json")
        #expect(json.text == #"{"sequence":"fibonacci","start":93,"count":1,"values":["12200160415121876738"]}"#)
        stream.close()
        await server.stop()
    }

    @Test func ndjsonAndJSONFollowAcceptAndFormat() async throws {
        let server = try SpoutTestServer()
        let ndjson = try StreamClient(
            port: server.port,
            path: "/sequences/primes?count=4",
            headers: ["Accept: application/x-ndjson"]
        )
        #expect(ndjson.header("Content-Type") == "application/x-ndjson")
        let text = String(decoding: try ndjson.readToEnd(), as: UTF8.self)
        #expect(
            text
                == "{\"index\":0,\"value\":\"2\"}\n{\"index\":1,\"value\":\"3\"}\n{\"index\":2,\"value\":\"5\"}\n{\"index\":3,\"value\":\"7\"}\n{\"end\":{\"reason\":\"completed\"}}\n"
        )
        ndjson.close()

        let json = try server.get("/sequences/fibonacci?count=10", headers: ["Accept: application/json"])
        #expect(json.header("Content-Type") == "application/json")
        #expect(
            json.text
                == #"{"sequence":"fibonacci","start":0,"count":10,"values":["0","1","1","2","3","5","8","13","21","34"]}"#
        )

        let overridden = try server.get(
            "/sequences/factorial?count=3&format=json",
            headers: ["Accept: text/event-stream"]
        )
        #expect(overridden.text == #"{"sequence":"factorial","start":0,"count":3,"values":["1","1","2"]}"#)

        let weighted = try server.get(
            "/sequences/naturals?count=2",
            headers: ["Accept: text/event-stream;q=0.2, application/json;q=0.9"]
        )
        #expect(weighted.text == #"{"sequence":"naturals","start":0,"count":2,"values":["0","1"]}"#)

        let refused = try server.get("/sequences/naturals?count=2", headers: ["Accept: image/png"])
        #expect(refused.status == 406)
        #expect(server.isHealthy())
        await server.stop()
    }

    @Test func lastEventIDResumesAtTheNextIndexAndPastTheEndIs204() async throws {
        let server = try SpoutTestServer()
        let resumed = try StreamClient(
            port: server.port,
            path: "/sequences/naturals?start=10&count=10",
            headers: ["Last-Event-ID: 14"]
        )
        let events = try resumed.remainingEvents()
        #expect(events.dropLast().map(\.lastEventID) == ["15", "16", "17", "18", "19"])
        #expect(events.last?.type == "end")
        resumed.close()

        let done = try server.get("/sequences/naturals?start=10&count=10", headers: ["Last-Event-ID: 19"])
        #expect(done.status == 204)
        #expect(done.body.isEmpty)

        let bogus = try server.get("/sequences/naturals?count=10", headers: ["Last-Event-ID: x\u{1}y"])
        #expect(bogus.status == 400)
        #expect(bogus.text.contains("Last-Event-ID"))
        #expect(server.isHealthy())
        await server.stop()
    }

    @Test func anUnboundedStreamRunsUntilTheClientLeavesAndThenIsCancelled() async throws {
        let server = try SpoutTestServer()
        let stream = try StreamClient(port: server.port, path: "/sequences/naturals")
        let events = try stream.nextEvents(10_000)
        #expect(events.map(\.lastEventID) == (0..<10_000).map(String.init))
        let probe = try #require(server.sequenceProbes.first)
        #expect(!probe.isCancelled)
        stream.close()
        #expect(eventually { probe.isCancelled })
        #expect(eventually { server.service.metrics.activeStreams.value == 0 })
        #expect(eventually { server.service.metrics.streamsEnded.value(["client_gone"]) == 1 })
        #expect(eventually { server.log.lines.contains { $0.contains(#""end":"client_gone""#) } })
        #expect(server.isHealthy())
        await server.stop()
    }

    @Test func headOfAStreamGetsTheHeadersOnly() async throws {
        let server = try SpoutTestServer()
        let client = try server.connect()
        try client.send("HEAD /sequences/naturals HTTP/1.1\r\nHost: x\r\n\r\n")
        let response = try client.readResponse(isHead: true)
        #expect(response.status == 200)
        #expect(response.header("Content-Type") == "text/event-stream")
        client.close()
        #expect(server.sequenceProbes.allSatisfy { $0.produced == 0 })
        #expect(server.isHealthy())
        await server.stop()
    }

    /// A service with one event loop whose costly-start preparations wait at `gate` until the test opens it.
    private func gatedService(_ gate: PreparationGate, log: MemoryLogSink? = nil) throws -> SpoutService {
        var configuration = SpoutConfiguration()
        configuration.port = 0
        configuration.eventLoops = 1  // every connection shares the one loop
        let probes = gate.probes
        return try SpoutService.start(
            configuration: configuration,
            log: log,
            hooks: ServiceHooks(
                makeSequenceProbe: { _ in
                    let probe = SequenceProbe()
                    probes.update { $0.append(probe) }
                    return probe
                },
                willReachStart: { _, _ in gate.hold() }
            )
        )
    }

    @Test func aCostlyStartIsReachedOffTheLoopWhileTheLoopServesOthers() async throws {
        let gate = PreparationGate()
        let service = try gatedService(gate)
        defer { gate.open() }
        let stream = try StreamClient(port: service.port, path: "/sequences/fibonacci?start=100000&count=1")
        #expect(stream.status == 200)
        try #require(gate.waitUntilHeld())
        // The preparation is held on its worker. Were it on the loop, the loop would be held too and this
        // request on the same (only) loop would time out.
        let client = try LoopbackClient(port: service.port)
        try client.sendGet("/health")
        let health = try client.readResponse(timeout: .seconds(5))
        #expect(health.status == 200)
        client.close()
        let probe = try #require(gate.probes.value.first)
        #expect(!probe.isStartReached)
        #expect(probe.produced == 0)
        // So is a JSON document with a costly start: built on a worker, answered on the loop.
        let json = try LoopbackClient(port: service.port)
        try json.sendGet("/sequences/factorial?start=10000&count=1&format=json")
        try #require(gate.waitUntilHeld())
        let health2 = try LoopbackClient(port: service.port)
        try health2.sendGet("/health")
        #expect(try health2.readResponse(timeout: .seconds(5)).status == 200)
        health2.close()

        gate.open()
        // F(100000) and 10000! are seconds of CPU in a debug build: alone, about one; on two loaded cores
        // in the full suite, past the readers' usual 10 s. The deadlines guard a hang, not the speed.
        let event = try #require(try stream.nextEvents(1, timeout: .seconds(60)).first)
        #expect(event.lastEventID == "100000")
        #expect(event.data.count == 20_899)  // F(100000) has 20,899 digits
        #expect(probe.isStartReached)
        let document = try json.readResponse(timeout: .seconds(60))
        #expect(document.status == 200)
        #expect(
            document.text.hasPrefix(#"{"sequence":"factorial","start":10000,"count":1,"values":["28462596809170545189"#)
        )
        #expect(gate.heldTooLong.value == false)
        stream.close()
        json.close()
        await service.shutdown()
    }

    @Test func aClientThatLeavesWhileItsStartIsReachedStopsThatWork() async throws {
        let gate = PreparationGate()
        let service = try gatedService(gate)
        defer { gate.open() }
        let stream = try StreamClient(port: service.port, path: "/sequences/factorial?start=10000")
        try #require(gate.waitUntilHeld())
        stream.close()
        // The loop sees the reader leave and ends the stream while its preparation is still held.
        #expect(eventually { service.metrics.streamsEnded.value(["client_gone"]) == 1 })
        let probe = try #require(gate.probes.value.first)
        gate.open()
        #expect(eventually { probe.isCancelled })
        #expect(!probe.isStartReached)
        #expect(probe.produced == 0)
        #expect(service.metrics.activeStreams.value == 0)
        await service.shutdown()
    }
}

/// Holds costly-start preparations (on their worker threads) until the test opens it.
///
/// **Thread safety:** safe from any thread.
private final class PreparationGate: Sendable {
    let probes = TestBox<[SequenceProbe]>([])
    /// Set when a preparation gave up waiting: the test never opened the gate in time.
    let heldTooLong = TestBox(false)
    private let entered = TestSignal()
    private let opened = TestBox(false)
    private let release = TestSignal()

    /// Called by the hook on the worker: waits (at most 20 s) until the gate is opened.
    func hold() {
        entered.signal()
        if opened.value { return }
        if !release.wait(timeout: .seconds(20)) { heldTooLong.update { $0 = true } }
        release.signal()  // let the next held preparation through too
    }

    /// Waits until a preparation is held at the gate.
    func waitUntilHeld() -> Bool {
        entered.wait(timeout: .seconds(10))
    }

    func open() {
        let first = opened.update { value -> Bool in
            defer { value = true }
            return !value
        }
        if first { release.signal() }
    }
}
