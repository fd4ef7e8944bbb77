import EventLoops
import HTTPServer
import OpenSSL
import TestSupport
import Testing

/// HTTPS from ``Server`` (``Server/Configuration/tls``) against real clients on loopback: curl and Python's `ssl`
/// trusting the test CA, refusals of a bad certificate, and what the server does with a stalled handshake, plain
/// HTTP and garbage on its TLS port.
@Suite(.serialized, .offPool) struct TLSServerTests {
    let pki: TestCertificates

    init() throws {
        pki = try TestCertificates.shared()
    }

    /// A server on `identity` whose `/json` answers JSON and `/stream` streams `streamBytes` through the
    /// writer's demand; its TLS events are recorded in `events`.
    private func makeServer(
        _ identity: TestCertificates.Identity,
        events: TestBox<[TLSEvent]> = TestBox([]),
        streamBytes: Int = 0,
        configure: (inout Server.Configuration) -> Void = { _ in }
    ) throws -> (TestServer, TLSReloadableContext) {
        let tls = try TLSReloadableContext(
            TLSServerConfiguration(certificateFile: identity.certificateFile, privateKeyFile: identity.privateKeyFile)
        )
        let server = try TestServer(
            configuration: {
                $0.tls = tls
                $0.tlsEvents = { event in events.update { $0.append(event) } }
                configure(&$0)
            },
            handler: { request, responder in
                switch request.path {
                case "/json":
                    responder.respond(headers: ["Content-Type": "application/json"], body: "{\"ok\":true}")
                case "/stream":
                    let writer = responder.startStreaming(headers: ["Content-Type": "text/event-stream"])
                    let sent = TestBox(0)
                    let event = Array("data: \(String(repeating: "x", count: 1000))\n\n".utf8)
                    @Sendable func pump() {
                        while writer.isWritable, sent.value < streamBytes {
                            writer.write(event)
                            sent.update { $0 += event.count }
                        }
                        if sent.value >= streamBytes { writer.finish() }
                    }
                    writer.onWritable = { pump() }
                    pump()
                default:
                    responder.respond(status: .notFound, body: "not found")
                }
            }
        )
        return (server, tls)
    }

    /// Runs curl against `path` on the server; returns its exit status and standard output.
    private func curl(_ port: Int, _ path: String, arguments: [String] = []) throws -> (Int32?, [UInt8]) {
        try pki.curl(port: port, path: path, arguments: arguments)
    }

    @Test func curlGetsJSONOverHTTPS() throws {
        let events = TestBox<[TLSEvent]>([])
        let (server, _) = try makeServer(pki.server, events: events)
        defer { server.stop() }
        let (status, output) = try curl(server.port, "/json")
        #expect(status == 0)
        #expect(String(decoding: output, as: UTF8.self) == "{\"ok\":true}")
        #expect(
            events.value.contains {
                if case .handshakeCompleted(let session) = $0 { return session.applicationProtocol == "http/1.1" }
                return false
            }
        )
    }

    @Test func curlReadsALargeStreamThroughTheWritersDemand() throws {
        let total = 4 * 1024 * 1024
        let (server, _) = try makeServer(pki.server, streamBytes: total) {
            $0.highWatermarkBytes = 64 * 1024
        }
        defer { server.stop() }
        let (status, output) = try curl(server.port, "/stream", arguments: ["-N"])
        #expect(status == 0)
        let event = Array("data: \(String(repeating: "x", count: 1000))\n\n".utf8)
        #expect(output.count == (total + event.count - 1) / event.count * event.count)
        #expect(output.starts(with: event))
        try server.expectHealthy(tls: pki)
    }

    @Test func aStalledReaderBoundsWhatTheWriterBuffersThroughTLS() throws {
        // A reader that completes the handshake, asks for a stream and never reads: the writer must stop at its
        // high watermark counting the ciphertext TLS has made and not sent, not only the plaintext before it (or
        // a stalled reader pins another batch as ciphertext). The write-stall timeout ends
        // the stream once the kernel takes nothing; what the producer wrote by then is final.
        let highWatermark = 8 * 1024
        let written = TestBox(0)
        let closed = TestSignal()
        let tls = try TLSReloadableContext(
            TLSServerConfiguration(
                certificateFile: pki.server.certificateFile,
                privateKeyFile: pki.server.privateKeyFile
            )
        )
        let server = try TestServer(
            configuration: {
                $0.tls = tls
                $0.adaptsHighWatermarkToReader = false
                $0.highWatermarkBytes = highWatermark
                $0.lowWatermarkBytes = 1024
                $0.streamSendBufferBytes = 4096
                $0.writeStallTimeout = .milliseconds(300)
            },
            handler: { _, responder in
                let writer = responder.startStreaming()
                let chunk = [UInt8](repeating: UInt8(ascii: "x"), count: 1024)
                @Sendable func pump() {
                    while writer.isWritable {
                        writer.write(chunk)
                        written.update { $0 += chunk.count }
                    }
                }
                writer.onWritable = { pump() }
                writer.onClose = { closed.signal() }
                pump()
            }
        )
        defer { server.stop() }
        let script = """
            import signal, socket, ssl, sys
            context = ssl.create_default_context(cafile=sys.argv[2])
            raw = socket.socket()
            raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            raw.connect(("127.0.0.1", int(sys.argv[1])))
            tls = context.wrap_socket(raw, server_hostname="localhost")
            tls.sendall(b"GET /stream HTTP/1.1\\r\\nHost: localhost\\r\\n\\r\\n")
            signal.pause()  # never reads; ended by the test
            """
        let child = try ChildProcess(
            executable: "/usr/bin/env",
            arguments: ["python3", "-c", script, String(server.port), pki.rootCertificateFile],
            standardOutput: .null,
            standardError: .null
        )
        defer { _ = child.kill() }
        #expect(closed.wait(timeout: .seconds(30)), "the stalled stream was not closed")
        // The high watermark plus what the kernel's small buffers took (16 KiB in all here); counting only the
        // plaintext, the writer went on for another batch held as ciphertext (24 KiB here).
        #expect(written.value < highWatermark + 12 * 1024, "\(written.value) bytes written")
    }

    @Test func pythonSSLKeepsAConnectionForSeveralRequests() throws {
        let (server, _) = try makeServer(pki.server)
        defer { server.stop() }
        let script = """
            import http.client, ssl, sys
            context = ssl.create_default_context(cafile=sys.argv[2])
            connection = http.client.HTTPSConnection("localhost", int(sys.argv[1]), context=context)
            for _ in range(3):
                connection.request("GET", "/json")
                response = connection.getresponse()
                print(response.status, response.read().decode())
            print(connection.sock.version())
            """
        let child = try ChildProcess(
            executable: "/usr/bin/env",
            arguments: ["python3", "-c", script, String(server.port), pki.rootCertificateFile],
            standardOutput: .pipe,
            standardError: .standardOutput
        )
        let output = String(decoding: try child.readStandardOutput(timeout: .seconds(30)), as: UTF8.self)
        #expect(child.wait(timeout: .seconds(10)) == .exited(0), "\(output)")
        #expect(output == "200 {\"ok\":true}\n200 {\"ok\":true}\n200 {\"ok\":true}\nTLSv1.3\n", "\(output)")
    }

    @Test(arguments: ["expired", "other-host"])
    func curlRefusesABadCertificate(_ which: String) throws {
        let events = TestBox<[TLSEvent]>([])
        let (server, _) = try makeServer(which == "expired" ? pki.expired : pki.otherHost, events: events)
        defer { server.stop() }
        let (status, output) = try curl(server.port, "/json")
        #expect(status == 60)  // CURLE_PEER_FAILED_VERIFICATION
        #expect(output.isEmpty)
        // curl checks the host name itself once the handshake is done, so only the expiry is refused during the
        // handshake: with an alert the server reads, or, when curl's close resets the connection before the
        // server read the alert, a handshake abandoned.
        guard which == "expired" else { return }
        #expect(
            eventually {
                events.value.contains {
                    switch $0 {
                    case .handshakeFailed(let failure): failure.reason == .alertReceived
                    case .handshakeAbandoned: true
                    case .handshakeCompleted, .handshakeTimedOut, .connectionClosed: false
                    }
                }
            },
            "\(events.value)"
        )
        #expect(
            !events.value.contains {
                if case .handshakeCompleted = $0 { return true }
                return false
            }
        )
    }

    @Test func plainHTTPToTheTLSPortGetsA400InClearAndIsClosed() throws {
        let events = TestBox<[TLSEvent]>([])
        let (server, _) = try makeServer(pki.server, events: events)
        defer { server.stop() }
        let client = try server.connect()
        try client.sendGet("/json")
        let response = try client.readResponse()
        #expect(response.status == 400)
        #expect(response.text.contains("https://"))
        #expect(client.waitForClose())
        #expect(
            events.value.contains {
                if case .handshakeFailed(let failure) = $0 { return failure.reason == .plaintextHTTP }
                return false
            }
        )
        try server.expectHealthy(tls: pki)
    }

    @Test func aStalledHandshakeIsClosedAtItsDeadline() throws {
        let events = TestBox<[TLSEvent]>([])
        let (server, _) = try makeServer(pki.server, events: events) {
            // 1 s, not less: the partial ClientHello must be sent before the deadline even by a test thread held
            // up after `connect`, or it meets a closed connection.
            $0.tlsHandshakeTimeout = .seconds(1)
        }
        defer { server.stop() }
        let silent = try server.connect()
        let partial = try server.connect()
        try partial.send([0x16, 0x03, 0x01, 0x02, 0x00, 0x01])  // the start of a ClientHello, never finished
        #expect(silent.waitForClose(timeout: .seconds(10)))
        #expect(partial.waitForClose(timeout: .seconds(10)))
        #expect(
            events.value.filter {
                if case .handshakeTimedOut = $0 { return true }
                return false
            }.count == 2
        )
        try server.expectHealthy(tls: pki)
    }

    @Test func garbageIsClosedAndTheServerGoesOn() throws {
        let events = TestBox<[TLSEvent]>([])
        let (server, _) = try makeServer(pki.server, events: events)
        defer { server.stop() }
        let client = try server.connect()
        var garbage: [UInt8] = []
        var seed: UInt32 = 0x1234_5678
        for _ in 0..<4096 {
            seed = seed &* 1_664_525 &+ 1_013_904_223
            garbage.append(UInt8(truncatingIfNeeded: seed >> 24))
        }
        garbage[0] = 0x42  // not a handshake record
        try? client.send(garbage)
        #expect(client.waitForClose())
        #expect(
            events.value.contains {
                if case .handshakeFailed(let failure) = $0 { return failure.reason == .protocolError }
                return false
            }
        )
        try server.expectHealthy(tls: pki)
    }

    @Test func aReloadWithABadFileKeepsServingTheOldCertificate() throws {
        let identity = TestCertificates.Identity(
            certificateFile: try pki.write("tls-server-reload.crt", contents: ""),
            privateKeyFile: try pki.write("tls-server-reload.key", contents: "")
        )
        try pki.copy(pki.server, over: identity)
        let (server, tls) = try makeServer(identity)
        defer { server.stop() }
        #expect(try curl(server.port, "/json").0 == 0)
        try pki.write("tls-server-reload.crt", contents: "garbage")
        guard case .failure(let error) = tls.reload() else {
            Issue.record("a garbage certificate was loaded")
            return
        }
        #expect(error.description.contains(identity.certificateFile))
        let (status, output) = try curl(server.port, "/json")
        #expect(status == 0)
        #expect(String(decoding: output, as: UTF8.self) == "{\"ok\":true}")
    }
}

extension TestServer {
    /// Checks with curl, on a new TLS connection, that the server still answers `GET /health`.
    func expectHealthy(tls pki: TestCertificates, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let (status, output) = try pki.curl(port: port, path: "/health")
        #expect(status == 0, sourceLocation: sourceLocation)
        #expect(String(decoding: output, as: UTF8.self) == "ok", sourceLocation: sourceLocation)
    }
}
