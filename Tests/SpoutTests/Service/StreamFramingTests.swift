import Foundation
import HTTPServer
import TestSupport
import Testing

@testable import Spout

/// How streams begin and end, as clients see them: no SSE client sees an event the stream did not send,
/// and every NDJSON stream ends with a line that says how it ended, shutdown included.
@Suite(.offPool) struct StreamFramingTests {
    /// A paced stream with keep-alives between its events, read to the end.
    private func pacedStreamWithHeartbeats(_ server: SpoutTestServer) throws -> String {
        let stream = try StreamClient(port: server.port, path: "/sequences/naturals?count=4&interval=150")
        let body = String(decoding: try stream.readToEnd(timeout: .seconds(20)), as: UTF8.self)
        stream.close()
        return body
    }

    @Test func everyBlockOfAnSSEStreamCarriesData() async throws {
        let server = try SpoutTestServer { $0.sse.heartbeatSeconds = 0.04 }
        let body = try pacedStreamWithHeartbeats(server)
        #expect(body.contains(": keep-alive\n"))
        #expect(body.hasPrefix("retry: 3000\n"))
        #expect(!body.hasPrefix("retry: 3000\n\n"))
        // A client that dispatches every block ended by an empty line (as httpx-sse does once it has seen a
        // `retry:` or an `id:`) must find data in each one.
        let blocks = body.components(separatedBy: "\n\n").dropLast()  // after the last "\n\n": nothing
        #expect(blocks.count == 5)
        for block in blocks {
            #expect(block.split(separator: "\n").contains { $0.hasPrefix("data: ") }, "a block without data: \(block)")
        }
        await server.stop()
    }

    @Test(.enabled(if: PythonSSEClients.testsEnabled))
    func pythonSSEClientsSeeExactlyTheEventsSent() async throws {
        let server = try SpoutTestServer { $0.sse.heartbeatSeconds = 0.04 }
        let url = "http://127.0.0.1:\(server.port)/sequences/naturals?count=4&interval=150"
        let seen = try PythonSSEClients.read(url)
        let expected = [
            ["message", "0"], ["message", "1"], ["message", "2"], ["message", "3"],
            ["end", #"{"reason":"completed"}"#],
        ]
        #expect(seen["sseclient"] == expected)
        // httpx-sse also reports each event's `retry:`: the first event carries the stream's.
        #expect(seen["httpx_sse"]?.map { Array($0.prefix(2)) } == expected)
        #expect(seen["httpx_sse"]?.map(\.last) == ["3000", "None", "None", "None", "None"])
        await server.stop()
    }

    @Test func ndjsonAndSSEStreamsGetTheirFinalLineOnShutdown() async throws {
        let server = try SpoutTestServer()
        var ndjson: [StreamClient] = []
        var sse: [StreamClient] = []
        for _ in 0..<20 {
            ndjson.append(try StreamClient(port: server.port, path: "/sequences/naturals?interval=5&format=ndjson"))
            sse.append(try StreamClient(port: server.port, path: "/sequences/naturals?interval=5"))
        }
        for stream in sse { _ = try stream.nextEvents(1) }
        #expect(eventually { server.service.metrics.activeStreams.value == 40 })
        let stopping = Task { await server.stop() }
        for stream in ndjson {
            let lines = String(decoding: try stream.readToEnd(timeout: .seconds(15)), as: UTF8.self).split(
                separator: "\n"
            )
            #expect(lines.last == #"{"end":{"reason":"shutdown"}}"#)
            #expect(lines.dropLast().allSatisfy { $0.hasPrefix(#"{"index":"#) })
            stream.close()
        }
        for stream in sse {
            let rest = try stream.remainingEvents(timeout: .seconds(15))
            #expect(rest.last?.type == "end")
            #expect(rest.last?.data == #"{"reason":"shutdown"}"#)
            stream.close()
        }
        await stopping.value
        #expect(server.service.metrics.streamsEnded.value(["shutdown"]) == 40)
    }

    @Test func aFailedNDJSONStreamEndsWithItsErrorLineOnly() {
        // The error line is the stream's last; no end object follows it (docs/HTTP.md, "Formats").
        var buffer = OutboundBuffer()
        let problem = Problem(status: 502, type: "/problems/upstream-failed", title: "Upstream failed", detail: "down")
        NDJSONTermEncoder().appendFailure(problem, to: &buffer)
        let text = String(decoding: buffer.readableBytes, as: UTF8.self)
        #expect(text.hasPrefix(#"{"error":{"#))
        #expect(!text.contains(#""end""#))
        #expect(text.filter { $0 == "\n" }.count == 1)
    }
}

/// The Python SSE clients `httpx-sse` and `sseclient-py`, run on a stream to see what they dispatch.
///
/// Skipped when `python3` lacks them (so `swift test` needs only the toolchain), unless
/// `SPOUT_REQUIRE_PYTHON_SSE` is set: then missing clients fail the test.
enum PythonSSEClients {
    static let script = #"""
        import json, sys, urllib.request
        import httpx, httpx_sse, sseclient
        url = sys.argv[1]
        seen = {"httpx_sse": [], "sseclient": []}
        with httpx.Client(timeout=20) as client:
            with httpx_sse.connect_sse(client, "GET", url) as source:
                for event in source.iter_sse():
                    seen["httpx_sse"].append([event.event, event.data, str(event.retry)])
        with urllib.request.urlopen(url, timeout=20) as response:
            for event in sseclient.SSEClient(response).events():
                seen["sseclient"].append([event.event, event.data])
        print(json.dumps(seen))
        """#

    static var isRequired: Bool {
        !(ProcessInfo.processInfo.environment["SPOUT_REQUIRE_PYTHON_SSE"] ?? "").isEmpty
    }

    static let isAvailable: Bool = {
        (try? run(["-c", "import httpx, httpx_sse, sseclient"]))?.status == 0
    }()

    static var testsEnabled: Bool { isRequired || isAvailable }

    /// What each client dispatched from `url`: `[type, data]` per event, and for httpx-sse its `retry` too.
    static func read(_ url: String) throws -> [String: [[String]]] {
        let result = try run(["-c", script, url])
        guard result.status == 0,
            let object = try JSONSerialization.jsonObject(with: result.output) as? [String: [[String]]]
        else {
            throw PythonFailure(status: result.status, output: String(decoding: result.output, as: UTF8.self))
        }
        return object
    }

    struct PythonFailure: Error, CustomStringConvertible {
        let status: Int32
        let output: String
        var description: String { "python3 exited \(status): \(output)" }
    }

    /// Runs `python3` (found by `/usr/bin/env`) with `arguments`: its exit status (-1 when a signal ended it or it
    /// did not end in time) and what it wrote on stdout and stderr.
    private static func run(_ arguments: [String]) throws -> (status: Int32, output: Data) {
        let process = try ChildProcess(
            executable: "/usr/bin/env",
            arguments: ["python3"] + arguments,
            standardOutput: .pipe,
            standardError: .standardOutput
        )
        let output = try process.readStandardOutput(timeout: .seconds(60))
        let status = process.wait(timeout: .seconds(10))?.exitStatus ?? -1
        return (status, Data(output))
    }
}
