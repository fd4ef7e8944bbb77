import Foundation
import Glibc
import TestSupport
import Testing

@testable import Spout

/// The `spout` executable itself: JSON log lines, `SIGTERM` draining after `shutdown.delaySeconds`, a second
/// signal ending the delay, configuration errors on stderr. Skips when the binary was not built beside the
/// tests (`swift test` builds it).
@Suite(.offPool) struct ExecutableSignalTests {
    private static var binary: URL? {
        let url = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(
            "spout"
        )
        if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        let alongside = Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("spout")
        return FileManager.default.isExecutableFile(atPath: alongside.path) ? alongside : nil
    }

    /// Reads a child's output line by line, each read with a deadline.
    final class Lines {
        private let fd: Int32
        private var buffer: [UInt8] = []
        private(set) var all: [String] = []

        /// `fd` belongs to the ``ChildProcess`` that the test holds while it reads.
        init(_ fd: Int32) {
            self.fd = fd
        }

        /// The next line whose JSON `event` is `event`, reading until `timeout`; `nil` on EOF or timeout.
        func next(event: String, timeout: Duration = .seconds(30)) -> [String: Any]? {
            let deadline = ContinuousClock.now + timeout
            while ContinuousClock.now < deadline {
                while let newline = buffer.firstIndex(of: 0x0A) {
                    let line = String(decoding: buffer[..<newline], as: UTF8.self)
                    buffer.removeFirst(newline + 1)
                    all.append(line)
                    if let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any],
                        object["event"] as? String == event
                    {
                        return object
                    }
                }
                var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&descriptor, 1, 200) >= 0 || errno == EINTR else { return nil }
                guard descriptor.revents != 0 else { continue }
                var chunk = [UInt8](repeating: 0, count: 4096)
                let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, 4096) }
                if count <= 0 { return nil }
                buffer += chunk[0..<count]
            }
            return nil
        }
    }

    private func launch(
        _ arguments: [String],
        environment: [String: String]
    ) throws -> (ChildProcess, Lines, Lines)? {
        guard let binary = Self.binary else { return nil }
        let process = try ChildProcess(
            executable: binary.path,
            arguments: arguments,
            environment: environment,
            standardOutput: .pipe,
            standardError: .pipe
        )
        return (process, Lines(process.standardOutput), Lines(process.standardError))
    }

    /// Whether the child ended within 30 s (reaped then; its status is in `termination`).
    private func waitForExit(_ process: ChildProcess) -> Bool {
        process.wait(timeout: .seconds(30)) != nil
    }

    @Test(
        .disabled(
            if: ProcessInfo.processInfo.environment["SPOUT_TEST_SANITIZER"] == "address",
            "under AddressSanitizer the child spout logs no draining line within the scaled wait (not understood yet)"
        )
    )
    func sigtermDrainsWithTheDelayAndASecondSignalEndsIt() throws {
        guard
            let (process, out, _) = try launch(
                ["--port", "0", "--event-loops", "1"],
                environment: ["SPOUT_SHUTDOWN_DELAY_SECONDS": "600", "SPOUT_PROT": "1"]
            )
        else { return }
        defer { if !process.hasExited { process.signal(SIGTERM) } }
        let warning = try #require(out.next(event: "configuration_unknown_variable"))
        #expect(warning["level"] as? String == "warn")
        #expect(warning["suggestion"] as? String == "SPOUT_PORT")
        let listening = try #require(out.next(event: "listening"))
        let port = try #require(listening["port"] as? Int)
        #expect(listening["level"] as? String == "info")

        process.signal(SIGTERM)
        let draining = try #require(out.next(event: "draining"))
        #expect(draining["delay_s"] as? Double == 600)
        let ready = try get(port: port, "/ready")
        #expect(ready.status == 503)
        #expect(ready.text == #"{"ready":false,"reason":"draining"}"#)
        #expect(try get(port: port, "/health", ["X-Request-ID: exe-1"]).status == 200)

        process.signal(SIGINT)  // an impatient operator: the second signal ends the delay
        #expect(out.next(event: "stopped") != nil)
        #expect(waitForExit(process))
        #expect(process.termination?.exitStatus == 0)
        #expect(out.all.contains { $0.contains(#""request_id":"exe-1""#) && $0.contains(#""path":"/health""#) })
    }

    @Test(
        .disabled(
            if: ProcessInfo.processInfo.environment["SPOUT_TEST_SANITIZER"] == "address",
            "under AddressSanitizer the child spout logs no draining line within the scaled wait (not understood yet)"
        )
    )
    func keepAliveClientsSendingAcrossSIGTERMAreToldToCloseAndLoseNoRequest() throws {
        guard
            let (process, out, _) = try launch(
                ["--port", "0"],
                environment: ["SPOUT_SHUTDOWN_DELAY_SECONDS": "600", "SPOUT_LOG_REQUESTS": "false"]
            )
        else { return }
        defer { if !process.hasExited { process.signal(SIGTERM) } }
        let listening = try #require(out.next(event: "listening"))
        let port = try #require(listening["port"] as? Int)
        let clients = (0..<8).map { _ in BackToBackClient(port: port) }
        for client in clients { client.start() }
        #expect(eventually(timeout: .seconds(30)) { clients.allSatisfy { $0.record.value.answered >= 5 } })

        process.signal(SIGTERM)
        #expect(out.next(event: "draining") != nil)
        #expect(
            eventually(timeout: .seconds(30)) {
                clients.allSatisfy { $0.record.value.finished || $0.record.value.answered >= 2_000 }
            }
        )
        process.signal(SIGINT)  // ends the delay: the listener closes
        #expect(out.next(event: "stopped") != nil)
        #expect(waitForExit(process))
        for (index, client) in clients.enumerated() {
            #expect(client.finish(), "client \(index) ends")
            let record = client.record.value
            #expect(record.lost.isEmpty, "client \(index): requests sent and never answered: \(record.lost.prefix(3))")
            #expect(record.toldToClose, "client \(index) heard Connection: close during the delay: \(record)")
        }
    }

    @Test(
        .disabled(
            if: ProcessInfo.processInfo.environment["SPOUT_TEST_SANITIZER"] == "address",
            "under AddressSanitizer the child spout logs no draining line within the scaled wait (not understood yet)"
        )
    )
    func sigintStopsAtOnceWithoutTheDelay() throws {
        guard
            let (process, out, _) = try launch(
                ["--port", "0", "--log-level", "debug"],
                environment: ["SPOUT_SHUTDOWN_DELAY_SECONDS": "600"]
            )
        else { return }
        defer { if !process.hasExited { process.signal(SIGTERM) } }
        let effective = try #require(out.next(event: "configuration"))
        #expect(effective["level"] as? String == "debug")
        #expect(effective["port"] as? String == "0")
        #expect(effective["shutdown.delaySeconds"] as? String == "600")
        #expect(effective["log.level"] as? String == #""debug""#)
        #expect(out.next(event: "listening") != nil)
        process.signal(SIGINT)
        let draining = try #require(out.next(event: "draining"))
        #expect(draining["delay_s"] as? Double == 0)
        #expect(waitForExit(process))
        #expect(process.termination?.exitStatus == 0)
    }

    @Test func aConfigurationErrorIsAJSONLineOnStderrAndExitCode2() throws {
        guard let (process, _, err) = try launch(["--port", "80a"], environment: [:]) else { return }
        let line = try #require(err.next(event: "configuration_invalid"))
        #expect(line["level"] as? String == "error")
        #expect(
            line["message"] as? String
                == #"configuration key "port" must be an integer in 0...65535, got "80a" (from --port)"#
        )
        #expect(waitForExit(process))
        #expect(process.termination?.exitStatus == 2)
    }

    @Test func versionAndHelpPrintAndExit() throws {
        guard let (version, versionOut, _) = try launch(["--version"], environment: [:]) else { return }
        _ = versionOut.next(event: "none")  // reads to the end of the output
        #expect(versionOut.all == ["spout \(BuildInfo.version) (revision \(BuildInfo.revision))"])
        #expect(waitForExit(version))
        #expect(version.termination?.exitStatus == 0)
        guard let (help, helpOut, _) = try launch(["--help"], environment: [:]) else { return }
        _ = helpOut.next(event: "none")
        #expect(helpOut.all.contains { $0.hasPrefix("  shutdown.delaySeconds  (SPOUT_SHUTDOWN_DELAY_SECONDS)") })
        #expect(waitForExit(help))
        #expect(help.termination?.exitStatus == 0)
    }

    private func get(port: Int, _ path: String, _ headers: [String] = []) throws -> LoopbackClient.Response {
        let client = try LoopbackClient(port: port)
        defer { client.close() }
        try client.sendGet(path, headers: headers)
        return try client.readResponse(timeout: .seconds(10))
    }
}
