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
        let probe = try? ChildProcess(
            executable: "/usr/bin/env",
            arguments: ["python3", "-c", "import prometheus_client"],
            standardOutput: .null,
            standardError: .null
        )
        let available = probe?.wait(timeout: .seconds(30))?.exitStatus == 0
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

        let process = try ChildProcess(
            executable: "/usr/bin/env",
            arguments: ["python3", "-c", Self.script],
            input: metrics.body,
            standardOutput: .pipe,
            standardError: .standardOutput
        )
        let report = String(decoding: try process.readStandardOutput(timeout: .seconds(60)), as: UTF8.self)
        let exit = process.wait(timeout: .seconds(10))
        #expect(exit?.exitStatus == 0, "\(report)")
        for family in [
            "process_cpu_seconds", "process_open_fds", "spout_build_info", "spout_streams_ended",
            "spout_http_request_duration_seconds", "spout_upstream_requests",
        ] {
            #expect(report.contains("'\(family)'"), "\(family) in \(report)")
        }
        await server.stop()
    }
}
