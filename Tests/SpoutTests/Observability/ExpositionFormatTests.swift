import Foundation
import TestSupport
import Testing

/// `/metrics` read by a real Prometheus parser: `prometheus_client` (PyPI) under `python3`. Skips when either
/// is missing, unless `SPOUT_REQUIRE_PROMETHEUS_PARSER=1` (then a missing parser fails).
@Suite(.offPool) struct ExpositionFormatTests {
    private static let script = #"""
        import sys
        from prometheus_client.parser import text_string_to_metric_families
        text = sys.stdin.read()
        seen = set()
        for family in text_string_to_metric_families(text):
            if family.name in seen:
                raise SystemExit("duplicate family " + family.name)
            seen.add(family.name)
            for sample in family.samples:
                if sample.value != sample.value:
                    raise SystemExit("NaN in " + sample.name)
        print(len(seen), sorted(seen))
        """#

    @Test func theExpositionParsesAsPrometheusText() async throws {
        let probe = Process()
        probe.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        probe.arguments = ["python3", "-c", "import prometheus_client"]
        probe.standardError = FileHandle.nullDevice
        let available =
            (try? probe.run()) != nil
            && {
                probe.waitUntilExit(); return probe.terminationStatus == 0
            }()
        guard available else {
            if ProcessInfo.processInfo.environment["SPOUT_REQUIRE_PROMETHEUS_PARSER"] == "1" {
                Issue.record("python3 with prometheus_client is required (pip install prometheus-client)")
            }
            return
        }
        let server = try SpoutTestServer()
        _ = try server.get("/sequences/fibonacci?count=3")
        _ = try server.get("/articles/1")
        _ = try server.get("/nowhere")
        let metrics = try server.get("/metrics")
        #expect(metrics.header("Content-Type") == "text/plain; version=0.0.4; charset=utf-8")

        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", Self.script]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = output
        try process.run()
        input.fileHandleForWriting.write(Data(metrics.body))
        try input.fileHandleForWriting.close()
        let report = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(report)")
        for family in [
            "process_cpu_seconds", "process_open_fds", "spout_build_info", "spout_streams_ended",
            "spout_http_request_duration_seconds", "spout_upstream_requests",
        ] {
            #expect(report.contains("'\(family)'"), "\(family) in \(report)")
        }
        await server.stop()
    }
}
