import Foundation
import Glibc
import HTTPServer
import OpenSSL
import TestSupport
import Testing

@testable import Spout

/// The service over HTTPS (`tls.certificateFile`, `tls.privateKeyFile`): curl trusting the test CA on a JSON
/// route, a resumed SSE stream and `/metrics`; a reload with a bad file; a start refused for bad files.
@Suite(.serialized, .offPool) struct TLSServiceTests {
    let pki: TestCertificates

    init() throws {
        pki = try TestCertificates.shared()
    }

    private func curl(_ port: Int, _ path: String, _ arguments: [String] = []) throws -> (Int32?, String) {
        let (status, output) = try pki.curl(port: port, path: path, arguments: arguments)
        return (status, String(decoding: output, as: UTF8.self))
    }

    @Test func curlGetsJSONAResumedStreamAndTheTLSMetrics() async throws {
        let server = try SpoutTestServer {
            $0.tls.certificateFile = pki.server.certificateFile
            $0.tls.privateKeyFile = pki.server.privateKeyFile
        }
        let (status, health) = try curl(server.port, "/health")
        #expect(status == 0)
        #expect(health == #"{"status":"ok"}"#)

        let (streamStatus, stream) = try curl(
            server.port,
            "/sequences/naturals?start=10&count=10",
            ["-N", "-H", "Accept: text/event-stream", "-H", "Last-Event-ID: 14"]
        )
        #expect(streamStatus == 0)
        let ids = stream.split(separator: "\n").filter { $0.hasPrefix("id:") }.map {
            $0.dropFirst(3).trimmingCharacters(in: .whitespaces)
        }
        #expect(ids.prefix(5) == ["15", "16", "17", "18", "19"], "\(stream)")
        #expect(stream.contains("event: end"), "\(stream)")

        let (_, metrics) = try curl(server.port, "/metrics")
        #expect(metrics.contains(#"spout_tls_handshakes_total{protocol="TLSv1.3"}"#), "\(metrics)")
        #expect(metrics.contains(#"spout_tls_handshake_failures_total{reason="plaintext_http"} 0"#))
        let expiry = try #require(server.service.tls?.current.certificateExpiry)
        #expect(expiry > pki.madeAt)
        #expect(metrics.contains("spout_tls_certificate_expiry_timestamp_seconds \(expiry)"), "\(metrics)")
        await server.stop()
    }

    @Test func tlsPortServesHTTPSBesidePlainHTTP() async throws {
        // A free port for HTTPS: the kernel picks one, which is closed again just before the service binds it.
        let (probe, tlsPort) = try LoopbackListener.open()
        close(probe)
        let server = try SpoutTestServer {
            $0.tls.certificateFile = pki.server.certificateFile
            $0.tls.privateKeyFile = pki.server.privateKeyFile
            $0.tls.port = tlsPort
        }
        #expect(server.service.tlsPort == tlsPort)
        #expect(server.isHealthy())  // plain HTTP on `port`
        let (status, health) = try curl(tlsPort, "/health")
        #expect(status == 0)
        #expect(health == #"{"status":"ok"}"#)
        #expect(try curl(server.port, "/health").0 != 0)  // `port` speaks no TLS
        #expect(server.events.lines.contains { $0.contains("and https://127.0.0.1:\(tlsPort)") })
        await server.stop()
        #expect(throws: (any Error).self) { try LoopbackClient(port: tlsPort) }  // stopped with the service
    }

    @Test func theDemoUpstreamServesArticlesWhenPortIsHTTPS() async throws {
        // No upstream: the service fetches its own /demo routes. With HTTPS on `port` it used to fetch them over
        // plain HTTP from that port, which answers 400, so /articles/1 failed (502).
        let server = try SpoutTestServer {
            $0.tls.certificateFile = pki.server.certificateFile
            $0.tls.privateKeyFile = pki.server.privateKeyFile
        }
        let (status, article) = try curl(server.port, "/articles/1", ["-w", "\n%{http_code}"])
        #expect(status == 0)
        #expect(article.hasSuffix("\n200"), "\(article)")
        #expect(article.contains(#""id":1"#), "\(article)")
        // The loopback listener it uses serves plain HTTP and the demo routes only.
        let demoPort = try #require(server.service.demoServer?.port)
        let client = try LoopbackClient(port: demoPort)
        try client.sendGet("/health")
        #expect(try client.readResponse().status == 404)
        client.close()
        await server.stop()
        #expect(throws: (any Error).self) { try LoopbackClient(port: demoPort) }  // stopped with the service
    }

    @Test func aReloadWithABadFileKeepsTheOldCertificateAndSaysWhy() async throws {
        let certificate = try pki.write("service-reload.crt", contents: "")
        let key = try pki.write("service-reload.key", contents: "")
        try pki.copy(pki.server, over: .init(certificateFile: certificate, privateKeyFile: key))
        let server = try SpoutTestServer {
            $0.tls.certificateFile = certificate
            $0.tls.privateKeyFile = key
        }
        #expect(try curl(server.port, "/health").0 == 0)
        try pki.write("service-reload.crt", contents: "-----BEGIN CERTIFICATE-----\nnot base64\n")
        guard case .failure = server.service.reloadTLS() else {
            Issue.record("a bad certificate file was accepted")
            await server.stop()
            return
        }
        #expect(server.events.lines.contains { $0.contains("tls_reload_failed") && $0.contains(certificate) })
        let (status, health) = try curl(server.port, "/health")
        #expect(status == 0)
        #expect(health == #"{"status":"ok"}"#)
        // A good file again: reloaded.
        try pki.copy(pki.server, over: .init(certificateFile: certificate, privateKeyFile: key))
        guard case .success = server.service.reloadTLS() else {
            Issue.record("a good certificate file was refused")
            await server.stop()
            return
        }
        #expect(server.events.lines.contains { $0.contains("tls_reloaded") })
        await server.stop()
    }

    @Test func anOCSPResponseIsStapledForClientsThatAskAndReloadedWithTheCertificate() async throws {
        let response = try pki.makeOCSPResponse(for: pki.server, name: "service-ocsp-\(UUID().uuidString).der")
        let server = try SpoutTestServer(tlsFileCheckInterval: .milliseconds(50)) {
            $0.tls.certificateFile = pki.server.certificateFile
            $0.tls.privateKeyFile = pki.server.privateKeyFile
            $0.tls.ocspResponseFile = response
        }
        let stapled = try pki.statusRequest(port: server.port)
        #expect(stapled.contains("OCSP Response Status: successful"), "\(stapled)")
        #expect(stapled.contains("Cert Status: good"), "\(stapled)")
        #expect(stapled.contains("Verify return code: 0 (ok)"), "\(stapled)")
        // A client that does not ask is served as before.
        #expect(try curl(server.port, "/health").0 == 0)

        // A bad new response, seen by the file watcher: the old one is still stapled, and the log says why.
        try Data("garbage".utf8).write(to: URL(fileURLWithPath: response), options: .atomic)
        #expect(
            eventually {
                server.events.lines.contains {
                    $0.contains("tls_reload_failed") && $0.contains("file_change") && $0.contains(response)
                        && $0.contains("not a DER OCSP response")
                }
            }
        )
        #expect(try pki.statusRequest(port: server.port).contains("OCSP Response Status: successful"))
        // SIGHUP's path says the same.
        guard case .failure(let error) = server.service.reloadTLS() else {
            Issue.record("a bad ocsp response file was accepted")
            await server.stop()
            return
        }
        guard case .ocspResponseFile(let path, let reason) = error else {
            Issue.record("\(error)")
            await server.stop()
            return
        }
        #expect(path == response)
        #expect(reason.contains("not a DER OCSP response"), "\(reason)")
        // A good one again: reloaded.
        _ = try pki.makeOCSPResponse(for: pki.server, name: String(response.split(separator: "/").last!))
        guard case .success = server.service.reloadTLS() else {
            Issue.record("a good ocsp response file was refused")
            await server.stop()
            return
        }
        #expect(try pki.statusRequest(port: server.port).contains("OCSP Response Status: successful"))
        await server.stop()
    }

    @Test func withoutAnOCSPResponseFileNothingIsStapled() async throws {
        let server = try SpoutTestServer {
            $0.tls.certificateFile = pki.server.certificateFile
            $0.tls.privateKeyFile = pki.server.privateKeyFile
        }
        let answer = try pki.statusRequest(port: server.port)
        #expect(answer.contains("OCSP response: no response sent"), "\(answer)")
        #expect(!answer.contains("OCSP Response Status"))
        await server.stop()
    }

    @Test(.enabled(if: TestCertificates.pythonTestsEnabled)) func replacedFilesAreReloadedAndAnOpenStreamKeepsFlowing()
        async throws
    {
        // The layout of a Kubernetes secret volume: tls.crt -> ..data/tls.crt, and ..data a link to a timestamped
        // directory that the kubelet replaces by renaming a new link over it.
        let directory = "\(pki.directory)/rotation-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        let files = FileManager.default
        try rotate(directory, to: pki.server, version: "v1")
        try files.createSymbolicLink(atPath: "\(directory)/tls.crt", withDestinationPath: "..data/tls.crt")
        try files.createSymbolicLink(atPath: "\(directory)/tls.key", withDestinationPath: "..data/tls.key")
        let server = try SpoutTestServer(tlsFileCheckInterval: .milliseconds(50)) {
            $0.tls.certificateFile = "\(directory)/tls.crt"
            $0.tls.privateKeyFile = "\(directory)/tls.key"
        }
        let first = try peerNotAfter(server.port)

        // A stream over TLS, open across the rotation.
        let stream = try ChildProcess(
            executable: "/usr/bin/env",
            arguments: [
                "python3", "-c", Self.peerScript, String(server.port), pki.rootCertificateFile, "/channels/rotation",
            ],
            standardOutput: .pipe,
            standardError: .null
        )
        defer { _ = stream.kill() }
        let lines = ExecutableSignalTests.Lines(stream.standardOutput)
        #expect(lines.next(event: "certificate")?["notAfter"] as? String == first)
        #expect(lines.next(event: "subscribed") != nil)
        #expect(try publish(server.port, 1))
        #expect(lines.next(event: "data")?["data"] as? String == #"{"n":1}"#)

        // Renewed: a new connection sees the new certificate; the open stream goes on.
        let renewed = try pki.makeServerIdentity("rotation-renewed", days: 20)
        try rotate(directory, to: renewed, version: "v2")
        var latest = first
        #expect(
            try eventually {
                latest = try peerNotAfter(server.port)
                return latest != first
            },
            "a new connection still got the old certificate"
        )
        #expect(server.events.lines.contains { $0.contains("tls_reloaded") && $0.contains("file_change") })
        #expect(try publish(server.port, 2))
        #expect(lines.next(event: "data")?["data"] as? String == #"{"n":2}"#)

        // A bad new file: the certificate of v2 stays, and the log says why.
        try files.createDirectory(atPath: "\(directory)/..v3", withIntermediateDirectories: false)
        try "garbage".write(toFile: "\(directory)/..v3/tls.crt", atomically: true, encoding: .utf8)
        try files.copyItem(atPath: renewed.privateKeyFile, toPath: "\(directory)/..v3/tls.key")
        try swapData(directory, to: "..v3")
        #expect(
            eventually {
                server.events.lines.contains {
                    $0.contains("tls_reload_failed") && $0.contains("file_change") && $0.contains(directory)
                }
            }
        )
        #expect(try peerNotAfter(server.port) == latest)
        #expect(try publish(server.port, 3))
        #expect(lines.next(event: "data")?["data"] as? String == #"{"n":3}"#)
        await server.stop()
    }

    @Test(.enabled(if: TestCertificates.pythonTestsEnabled)) func openConnectionsAreCountedByProtocolAndCipher()
        async throws
    {
        let server = try SpoutTestServer {
            $0.tls.certificateFile = pki.server.certificateFile
            $0.tls.privateKeyFile = pki.server.privateKeyFile
        }
        func series() -> [String] {
            server.service.metrics.registry.render().split(separator: "\n").map(String.init).filter {
                $0.hasPrefix("spout_tls_open_connections{")
            }
        }
        #expect(series().isEmpty)
        let stream = try ChildProcess(
            executable: "/usr/bin/env",
            arguments: [
                "python3", "-c", Self.peerScript, String(server.port), pki.rootCertificateFile, "/channels/gauge",
            ],
            standardOutput: .pipe,
            standardError: .null
        )
        let lines = ExecutableSignalTests.Lines(stream.standardOutput)
        #expect(lines.next(event: "subscribed") != nil)
        let open = series()
        #expect(open.count == 1, "\(open)")
        let cipher = TLSContext.offeredCipherSuites.first { open.first?.contains(#"cipher="\#($0)""#) == true }
        #expect(cipher?.hasPrefix("TLS_") == true, "\(open)")
        #expect(open.first?.hasPrefix(#"spout_tls_open_connections{protocol="TLSv1.3",cipher="#) == true)
        #expect(open.first?.hasSuffix("} 1") == true, "\(open)")
        _ = stream.kill()
        // Closed: the series stays, at 0.
        #expect(eventually { series().count == 1 && series().first?.hasSuffix("} 0") == true }, "\(series())")
        await server.stop()
    }

    @Test func openConnectionLabelsAreBounded() {
        let odd = TLSSessionInfo(
            protocolVersion: "SSLv3",
            cipherSuite: "RC4-MD5",
            applicationProtocol: nil,
            serverName: nil,
            resumed: false
        )
        #expect(TLSMetrics.labels(odd) == ["other", "other"])
        let usual = TLSSessionInfo(
            protocolVersion: "TLSv1.2",
            cipherSuite: "ECDHE-ECDSA-AES128-GCM-SHA256",
            applicationProtocol: "http/1.1",
            serverName: "localhost",
            resumed: false
        )
        #expect(TLSMetrics.labels(usual) == ["TLSv1.2", "ECDHE-ECDSA-AES128-GCM-SHA256"])
    }

    @Test func aBadCertificateFileRefusesTheStart() throws {
        let garbage = try pki.write("service-garbage.crt", contents: "garbage")
        var configuration = SpoutConfiguration()
        configuration.port = 0
        configuration.tls.certificateFile = garbage
        configuration.tls.privateKeyFile = pki.server.privateKeyFile
        #expect {
            try SpoutService.start(configuration: configuration)
        } throws: { error in
            guard case .certificateFile(let path, _) = error as? TLSError else { return false }
            return path == garbage
        }
    }

    @Test func theTLSKeysAreReadFromTheEnvironmentAndCheckedTogether() throws {
        guard
            case .run(let configuration) = try SpoutConfiguration.load(
                arguments: [],
                environment: [
                    "SPOUT_TLS_CERTIFICATE_FILE": "/etc/spout/tls.crt",
                    "SPOUT_TLS_PRIVATE_KEY_FILE": "/etc/spout/tls.key", "SPOUT_TLS_PORT": "8443",
                ]
            )
        else {
            Issue.record("expected a run command")
            return
        }
        #expect(configuration.tls.certificateFile == "/etc/spout/tls.crt")
        #expect(configuration.tls.privateKeyFile == "/etc/spout/tls.key")
        #expect(configuration.tls.port == 8443)
        #expect(throws: ConfigError.self) {
            try SpoutConfiguration.load(arguments: [], environment: ["SPOUT_TLS_CERTIFICATE_FILE": "/etc/tls.crt"])
        }
        #expect(throws: ConfigError.self) {
            try SpoutConfiguration.load(arguments: [], environment: ["SPOUT_TLS_PORT": "8443"])
        }
        #expect(throws: ConfigError.self) {
            try SpoutConfiguration.load(
                arguments: [],
                environment: [
                    "SPOUT_TLS_CERTIFICATE_FILE": "/a", "SPOUT_TLS_PRIVATE_KEY_FILE": "/b", "SPOUT_TLS_PORT": "8080",
                ]
            )
        }
    }
}

/// The `spout` executable with TLS: a bad file refuses the start with a JSON line and exit 2; `SIGHUP` reloads the
/// files, keeping the old certificate when the new one is bad. Skips when the binary was not built beside the tests.
@Suite(.serialized, .offPool) struct TLSExecutableTests {
    private static var binary: String? {
        let path = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("spout").path
        if FileManager.default.isExecutableFile(atPath: path) { return path }
        let alongside = Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("spout").path
        return FileManager.default.isExecutableFile(atPath: alongside) ? alongside : nil
    }

    @Test func aBadCertificateFileIsAJSONLineOnStderrAndExitCode2() throws {
        guard let binary = Self.binary else { return }
        let pki = try TestCertificates.shared()
        let garbage = try pki.write("executable-garbage.crt", contents: "garbage")
        let process = try ChildProcess(
            executable: binary,
            environment: [
                "SPOUT_PORT": "0", "SPOUT_TLS_CERTIFICATE_FILE": garbage,
                "SPOUT_TLS_PRIVATE_KEY_FILE": pki.server.privateKeyFile,
            ],
            standardOutput: .pipe,
            standardError: .pipe
        )
        let errors = ExecutableSignalTests.Lines(process.standardError)
        let line = try #require(errors.next(event: "tls_invalid"))
        #expect((line["message"] as? String)?.hasPrefix("tls certificate file \(garbage): ") == true, "\(line)")
        #expect(process.wait(timeout: .seconds(30))?.exitStatus == 2)
    }

    @Test(
        .disabled(
            if: ProcessInfo.processInfo.environment["SPOUT_TEST_SANITIZER"] == "address",
            "under AddressSanitizer the child's output ends right after the first SIGHUP (not understood yet)"
        )
    )
    func sighupReloadsAndABadFileKeepsTheOldCertificate() throws {
        guard let binary = Self.binary else { return }
        let pki = try TestCertificates.shared()
        let identity = TestCertificates.Identity(
            certificateFile: try pki.write("executable-reload.crt", contents: ""),
            privateKeyFile: try pki.write("executable-reload.key", contents: "")
        )
        try pki.copy(pki.server, over: identity)
        let process = try ChildProcess(
            executable: binary,
            environment: [
                "SPOUT_PORT": "0", "SPOUT_EVENT_LOOPS": "1", "SPOUT_TLS_CERTIFICATE_FILE": identity.certificateFile,
                "SPOUT_TLS_PRIVATE_KEY_FILE": identity.privateKeyFile,
            ],
            standardOutput: .pipe,
            standardError: .pipe
        )
        defer { _ = process.kill() }
        let output = ExecutableSignalTests.Lines(process.standardOutput)
        let listening = try #require(output.next(event: "listening"))
        let port = try #require(listening["port"] as? Int)
        #expect((listening["message"] as? String)?.hasPrefix("listening on https://") == true, "\(listening)")

        try pki.write("executable-reload.crt", contents: "garbage")
        process.signal(SIGHUP)
        let failed = try #require(output.next(event: "tls_reload_failed"))
        #expect((failed["message"] as? String)?.contains(identity.certificateFile) == true, "\(failed)")
        #expect(try TLSServiceTests.curlHealth(port: port, pki: pki))

        try pki.copy(pki.server, over: identity)
        process.signal(SIGHUP)
        #expect(output.next(event: "tls_reloaded") != nil)
        #expect(try TLSServiceTests.curlHealth(port: port, pki: pki))
        process.signal(SIGINT)
        #expect(process.wait(timeout: .seconds(30))?.exitStatus == 0)
    }
}

extension TLSServiceTests {
    /// Whether curl, trusting the test CA, gets `/health` answered over HTTPS on `port`.
    static func curlHealth(port: Int, pki: TestCertificates) throws -> Bool {
        let (status, output) = try pki.curl(port: port, path: "/health")
        return status == 0 && String(decoding: output, as: UTF8.self) == #"{"status":"ok"}"#
    }

    /// Connects with Python's `ssl` trusting the test CA, prints the server certificate's `notAfter` as a JSON
    /// line (`certificate`); with a third argument, subscribes to that SSE path (`subscribed` once the response
    /// head came) and prints each `data:` line (`data`).
    static let peerScript = """
        import http.client, json, ssl, sys
        context = ssl.create_default_context(cafile=sys.argv[2])
        connection = http.client.HTTPSConnection("localhost", int(sys.argv[1]), context=context, timeout=30)
        connection.connect()
        print(json.dumps({"event": "certificate", "notAfter": connection.sock.getpeercert()["notAfter"]}), flush=True)
        if len(sys.argv) > 3:
            connection.request("GET", sys.argv[3], headers={"Accept": "text/event-stream"})
            response = connection.getresponse()
            print(json.dumps({"event": "subscribed", "status": response.status}), flush=True)
            while True:
                line = response.readline()
                if not line:
                    break
                if line.startswith(b"data:"):
                    print(json.dumps({"event": "data", "data": line[5:].strip().decode()}), flush=True)
        """

    /// The `notAfter` of the certificate a new connection to `port` is served.
    func peerNotAfter(_ port: Int) throws -> String? {
        let child = try ChildProcess(
            executable: "/usr/bin/env",
            arguments: ["python3", "-c", Self.peerScript, String(port), pki.rootCertificateFile],
            standardOutput: .pipe,
            standardError: .null
        )
        let output = try child.readStandardOutput(timeout: .seconds(30))
        _ = child.wait(timeout: .seconds(10))
        let object = try? JSONSerialization.jsonObject(with: Data(output)) as? [String: Any]
        return object?["notAfter"] as? String
    }

    /// Publishes `{"n":number}` on the channel `rotation` over HTTPS; true when accepted.
    func publish(_ port: Int, _ number: Int) throws -> Bool {
        let (status, _) = try curl(
            port,
            "/channels/rotation/events",
            ["-f", "-X", "POST", "-H", "Content-Type: application/json", "--data", channelBody([number])]
        )
        return status == 0
    }

    /// Writes `identity`'s files into `directory/..version` and points `..data` at it, as the kubelet does.
    func rotate(_ directory: String, to identity: TestCertificates.Identity, version: String) throws {
        let files = FileManager.default
        try files.createDirectory(atPath: "\(directory)/..\(version)", withIntermediateDirectories: false)
        try files.copyItem(atPath: identity.certificateFile, toPath: "\(directory)/..\(version)/tls.crt")
        try files.copyItem(atPath: identity.privateKeyFile, toPath: "\(directory)/..\(version)/tls.key")
        try swapData(directory, to: "..\(version)")
    }

    /// Points `directory/..data` at `target` atomically (a new link renamed over the old one).
    func swapData(_ directory: String, to target: String) throws {
        let temporary = "\(directory)/..data_tmp"
        try FileManager.default.createSymbolicLink(atPath: temporary, withDestinationPath: target)
        guard rename(temporary, "\(directory)/..data") == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
    }
}
