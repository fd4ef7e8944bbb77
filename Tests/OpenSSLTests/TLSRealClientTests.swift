import Foundation
import OpenSSL
import TestSupport
import Testing

/// Real TLS clients (Python's `ssl`, `openssl s_client`) against a server ``TLSEngine`` over a loopback socket
/// (``LoopbackTLSServer``).
@Suite(.offPool) struct TLSRealClientTests {
    let pki: TestCertificates

    init() throws {
        pki = try TestCertificates.shared()
    }

    func serverContext(_ identity: TestCertificates.Identity) throws -> TLSContext {
        try TLSContext(
            server: TLSServerConfiguration(
                certificateFile: identity.certificateFile,
                privateKeyFile: identity.privateKeyFile,
                applicationProtocols: ["http/1.1"]
            )
        )
    }

    /// A Python client: connects, verifies against the test root for `localhost`, offers h2 and http/1.1, sends a
    /// line, reads the answer, closes with close_notify. Prints `version cipher alpn | answer`, or
    /// `verify-failed <reason>`, or `handshake-failed <reason>`. Its third argument limits it: `1.2` to TLS 1.2,
    /// `1.1` to TLS 1.1 only, `cbc` to TLS 1.2 with CBC suites only (none of Mozilla intermediate's).
    static let pythonClient = """
        import socket, ssl, sys
        port, ca, maximum = int(sys.argv[1]), sys.argv[2], sys.argv[3]
        context = ssl.create_default_context(cafile=ca)
        context.set_alpn_protocols(["h2", "http/1.1"])
        if maximum == "1.2":
            context.maximum_version = ssl.TLSVersion.TLSv1_2
        if maximum == "1.1":
            context.set_ciphers("DEFAULT:@SECLEVEL=0")
            context.minimum_version = ssl.TLSVersion.TLSv1_1
            context.maximum_version = ssl.TLSVersion.TLSv1_1
        if maximum == "cbc":
            context.maximum_version = ssl.TLSVersion.TLSv1_2
            context.set_ciphers("ECDHE-ECDSA-AES128-SHA:ECDHE-ECDSA-AES256-SHA384")
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
            try:
                tls = context.wrap_socket(raw, server_hostname="localhost")
            except ssl.SSLCertVerificationError as error:
                print("verify-failed", error.verify_message)
                sys.exit(0)
            except ssl.SSLError as error:
                print("handshake-failed", error.reason)
                sys.exit(0)
            tls.sendall(b"hello over tls\\n")
            answer = b""
            while not answer.endswith(b"\\n"):
                chunk = tls.recv(4096)
                if not chunk:
                    break
                answer += chunk
            print(tls.version(), tls.cipher()[0], tls.selected_alpn_protocol(), "|", answer.decode().strip())
            tls.unwrap()
        """

    func runPython(port: Int, maximum: String = "1.3") throws -> String {
        let child = try ChildProcess(
            executable: "/usr/bin/env",
            arguments: [
                "python3", "-W", "ignore", "-c", Self.pythonClient, String(port), pki.rootCertificateFile, maximum,
            ],
            standardOutput: .pipe,
            standardError: .standardOutput
        )
        let output = try child.readStandardOutput(timeout: .seconds(20))
        _ = child.wait(timeout: .seconds(10))
        return String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func pythonSpeaksTLS13WithALPNAndClosesWithCloseNotify() throws {
        let server = try LoopbackTLSServer(context: try serverContext(pki.server), closeAfterEcho: false)
        let output = try runPython(port: server.port)
        let outcome = try #require(server.wait())
        #expect(output.hasPrefix("TLSv1.3 TLS_"), "\(output)")
        #expect(output.hasSuffix("http/1.1 | echo: hello over tls"), "\(output)")
        #expect(outcome.session?.protocolVersion == "TLSv1.3")
        #expect(outcome.session?.applicationProtocol == "http/1.1")
        #expect(outcome.session?.serverName == "localhost")
        #expect(outcome.received == Array("hello over tls\n".utf8))
        #expect(outcome.receivedCloseNotify, "\(outcome)")
        #expect(outcome.failure == nil)
    }

    @Test func pythonLimitedToTLS12GetsAnIntermediateSuite() throws {
        let server = try LoopbackTLSServer(context: try serverContext(pki.server), closeAfterEcho: false)
        let output = try runPython(port: server.port, maximum: "1.2")
        let outcome = try #require(server.wait())
        #expect(output.hasPrefix("TLSv1.2 ECDHE-ECDSA-"), "\(output)")
        #expect(output.hasSuffix("| echo: hello over tls"), "\(output)")
        #expect(outcome.session?.protocolVersion == "TLSv1.2")
        let cipher = try #require(outcome.session?.cipherSuite)
        #expect(
            ["ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-ECDSA-CHACHA20-POLY1305"]
                .contains(cipher)
        )
    }

    @Test func pythonRefusesAnExpiredCertificateAndTheServerHearsWhy() throws {
        let server = try LoopbackTLSServer(context: try serverContext(pki.expired), closeAfterEcho: false)
        let output = try runPython(port: server.port)
        let outcome = try #require(server.wait())
        #expect(output == "verify-failed certificate has expired", "\(output)")
        #expect(outcome.failure?.reason == .alertReceived, "\(outcome)")
        #expect(outcome.session == nil)
    }

    @Test func aClientOfferingOnlyTLS11IsRefused() throws {
        let server = try LoopbackTLSServer(context: try serverContext(pki.server), closeAfterEcho: false)
        let output = try runPython(port: server.port, maximum: "1.1")
        let outcome = try #require(server.wait())
        #expect(output.hasPrefix("handshake-failed"), "\(output)")
        #expect(outcome.failure?.reason == .unsupportedProtocol, "\(outcome)")
    }

    @Test func aClientOfferingOnlyCBCSuitesIsRefused() throws {
        let server = try LoopbackTLSServer(context: try serverContext(pki.server), closeAfterEcho: false)
        let output = try runPython(port: server.port, maximum: "cbc")
        let outcome = try #require(server.wait())
        #expect(output.hasPrefix("handshake-failed"), "\(output)")
        #expect(outcome.failure?.reason == .noSharedCipher, "\(outcome)")
    }

    @Test func opensslSClientVerifiesTheChainAndSeesTheServerClose() throws {
        let openssl = try #require(TestCertificates.executable("openssl"))
        let server = try LoopbackTLSServer(context: try serverContext(pki.server), closeAfterEcho: true)
        let child = try ChildProcess(
            executable: openssl,
            arguments: [
                "s_client", "-connect", "127.0.0.1:\(server.port)", "-servername", "localhost", "-verify_hostname",
                "localhost", "-CAfile", pki.rootCertificateFile, "-verify_return_error", "-alpn", "http/1.1", "-brief",
                "-ign_eof",
            ],
            input: Array("hello from s_client\n".utf8),
            standardOutput: .pipe,
            standardError: .standardOutput
        )
        let output = String(decoding: try child.readStandardOutput(timeout: .seconds(20)), as: UTF8.self)
        let exit = child.wait(timeout: .seconds(10))
        let outcome = try #require(server.wait())
        #expect(exit == .exited(0), "\(output)")
        #expect(output.contains("Verification: OK"), "\(output)")
        #expect(output.contains("echo: hello from s_client"), "\(output)")
        #expect(outcome.session?.applicationProtocol == "http/1.1")
        #expect(outcome.received == Array("hello from s_client\n".utf8))
    }

    @Test func plainHTTPOverTheSocketIsRefusedAsPlainHTTP() throws {
        let server = try LoopbackTLSServer(context: try serverContext(pki.server), closeAfterEcho: false)
        let client = try LoopbackClient(port: server.port)
        try client.send("GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let outcome = try #require(server.wait())
        #expect(outcome.failure?.reason == .plaintextHTTP, "\(outcome)")
    }
}
