import Foundation
import TestSupport
import Testing

@testable import Spout

/// A real browser's `EventSource` over HTTPS: headless Chromium trusting the test CA that the tests make, through
/// `--ignore-certificate-errors-spki-list` with the SHA-256 of the intermediate CA's public key (its SPKI), which
/// sits in the chain Spout sends; a certificate of another CA stays refused. No NSS database or extra package.
///
/// Skipped without `chromium` or the `openssl` tool, unless `SPOUT_REQUIRE_BROWSER` or `SPOUT_REQUIRE_OPENSSL` is
/// set (CI): then a missing one fails.
@Suite(
    .serialized,
    .offPool(limited: false),
    .enabled(if: HeadlessChromium.testsEnabled && TestCertificates.testsEnabled),
    .timeLimit(.minutes(3 * TestTiming.scale))
)
struct TLSEventSourceBrowserTests {
    @Test func eventSourceStreamsOverHTTPSTrustingTheTestCA() async throws {
        let pki = try TestCertificates.shared()
        let server = try SpoutTestServer {
            $0.tls.certificateFile = pki.server.certificateFile
            $0.tls.privateKeyFile = pki.server.privateKeyFile
        }
        let untrusted = try SpoutTestServer {
            $0.tls.certificateFile = pki.untrusted.certificateFile
            $0.tls.privateKeyFile = pki.untrusted.privateKeyFile
        }
        let pin = try Self.spkiHash(of: "\(pki.directory)/intermediate.crt")
        let harness = try BrowserHarness(browserArguments: ["--ignore-certificate-errors-spki-list=\(pin)"])
        defer { harness.close() }

        try harness.watch("https://127.0.0.1:\(server.port)/sequences/fibonacci?count=10", closeOnEnd: true)
        let seen = try harness.until("the end event", "log.ends.length >= 1")
        #expect(seen.messages.map(\.data) == EventSourceBrowserTests.fibonacci)
        #expect(seen.messages.map(\.id) == (0..<10).map(String.init))
        #expect(Set(seen.messages.map(\.origin)) == ["https://127.0.0.1:\(server.port)"])
        #expect(seen.ends.map(\.data) == [#"{"reason":"completed"}"#])
        #expect(seen.errors.isEmpty)
        #expect(eventually { server.requests(to: "/sequences/fibonacci").count == 1 })
        #expect(server.requests(to: "/sequences/fibonacci").first?.events == 10)
        let metrics = server.service.metrics.registry.render()
        #expect(metrics.contains(#"spout_tls_handshakes_total{protocol="TLSv1.3"}"#), "\(metrics)")

        // A certificate of a CA the browser was not told to trust: refused, nothing dispatched.
        try harness.watch("https://127.0.0.1:\(untrusted.port)/sequences/fibonacci?count=10", closeOnEnd: true)
        let refused = try harness.until("the error", "log.errors.length >= 1")
        #expect(refused.messages.isEmpty)
        #expect(refused.opens.isEmpty)
        #expect(untrusted.requests(to: "/sequences/fibonacci").isEmpty)
        await server.stop()
        await untrusted.stop()
    }

    /// The base64 SHA-256 of `certificate`'s public key (DER SubjectPublicKeyInfo), as Chromium's SPKI list wants.
    static func spkiHash(of certificate: String) throws -> String {
        let openssl = try #require(TestCertificates.executable("openssl"))
        let shell = try #require(TestCertificates.executable("sh"))
        let child = try ChildProcess(
            executable: shell,
            arguments: [
                "-c",
                "\"$0\" x509 -in \"$1\" -pubkey -noout | \"$0\" pkey -pubin -outform der "
                    + "| \"$0\" dgst -sha256 -binary | \"$0\" base64 -A",
                openssl, certificate,
            ],
            standardOutput: .pipe,
            standardError: .null
        )
        let output = String(decoding: try child.readStandardOutput(timeout: .seconds(30)), as: UTF8.self)
        #expect(child.wait(timeout: .seconds(10)) == .exited(0))
        return output.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
