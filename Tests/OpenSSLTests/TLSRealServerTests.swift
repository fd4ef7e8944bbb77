import Foundation
import Glibc
import OpenSSL
import TestSupport
import Testing

/// A client ``TLSEngine`` pumped over a loopback socket against a real server: Python's `ssl`, asking for a client
/// certificate (as a Redis with `tls-auth-clients yes` does).
@Suite(.offPool) struct TLSRealServerTests {
    let pki: TestCertificates

    init() throws {
        pki = try TestCertificates.shared()
    }

    /// A Python server on a free loopback port (printed first): presents `server`, requires a client certificate
    /// from the test root, reads a line, answers `peer <client's CN>`, prints the same or `handshake-failed <reason>`.
    static let pythonServer = """
        import socket, ssl, sys
        certificate, key, ca = sys.argv[1:4]
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(certificate, key)
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(ca)
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.settimeout(20)
        print(listener.getsockname()[1], flush=True)
        connection, _ = listener.accept()
        connection.settimeout(20)
        try:
            tls = context.wrap_socket(connection, server_side=True)
            peer = dict(field[0] for field in tls.getpeercert()["subject"])["commonName"]
            line = b""
            while not line.endswith(b"\\n"):
                chunk = tls.recv(100)
                if not chunk:
                    break
                line += chunk
            tls.sendall(b"peer " + peer.encode() + b"\\n")
            print("peer", peer, flush=True)
        except (ssl.SSLError, OSError) as error:
            print("handshake-failed", getattr(error, "reason", error), flush=True)
        """

    /// Starts the server and reads its port.
    func startServer() throws -> (ChildProcess, Int) {
        let child = try ChildProcess(
            executable: "/usr/bin/env",
            arguments: [
                "python3", "-W", "ignore", "-c", Self.pythonServer, pki.server.certificateFile,
                pki.server.privateKeyFile, pki.rootCertificateFile,
            ],
            standardOutput: .pipe,
            standardError: .standardOutput
        )
        var line: [UInt8] = []
        var byte: UInt8 = 0
        let deadline = ContinuousClock.now + TestTiming.scaled(.seconds(20))
        while ContinuousClock.now < deadline && line.last != UInt8(ascii: "\n") {
            var readable = pollfd(fd: child.standardOutput, events: Int16(POLLIN), revents: 0)
            guard poll(&readable, 1, 1000) > 0 else { continue }
            guard read(child.standardOutput, &byte, 1) == 1 else { break }
            line.append(byte)
        }
        let port = try #require(
            Int(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
        )
        return (child, port)
    }

    /// Connects `engine` to the port, sends `hello\n` once the handshake completes and reads until a line ends or
    /// the connection ends; returns what was read and how it ended.
    func exchange(_ engine: TLSEngine, port: Int) throws -> (received: [UInt8], failure: TLSFailure?) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        try #require(fd >= 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        try #require(connected == 0)

        func flush() {
            while engine.pendingOutputCount > 0 {
                let bytes = engine.takeOutput(maxCount: 16384)
                var offset = 0
                while offset < bytes.count {
                    let sent = bytes[offset...].withUnsafeBytes {
                        send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
                    }
                    guard sent > 0 else { return }
                    offset += sent
                }
            }
        }

        var received: [UInt8] = []
        var sent = false
        var input = [UInt8](repeating: 0, count: 16384)
        var plaintext = [UInt8](repeating: 0, count: 4096)
        let deadline = ContinuousClock.now + TestTiming.scaled(.seconds(20))
        while ContinuousClock.now < deadline {
            if engine.session == nil, case .failed(let failure) = engine.handshake() {
                flush()
                return (received, failure)
            }
            if engine.session != nil {
                if !sent {
                    sent = true
                    #expect(engine.write(Array("hello\n".utf8)) == .wrote(6))
                }
                reading: while true {
                    switch plaintext.withUnsafeMutableBytes({ engine.read(into: $0) }) {
                    case .bytes(let count):
                        received.append(contentsOf: plaintext[..<count])
                        if received.last == UInt8(ascii: "\n") {
                            _ = engine.shutdown()
                            flush()
                            return (received, nil)
                        }
                    case .wantInput, .outputFull:
                        break reading
                    case .closed:
                        return (received, nil)
                    case .failed(let failure):
                        return (received, failure)
                    }
                }
            }
            flush()
            var readable = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&readable, 1, 1000) > 0 else { continue }
            let count = input.withUnsafeMutableBytes { read(fd, $0.baseAddress, min($0.count, engine.inputCapacity)) }
            if count <= 0 { return (received, engine.failure) }
            engine.feed(input[..<count])
        }
        Issue.record("the exchange did not end in time")
        return (received, nil)
    }

    @Test func theClientCertificateIsPresentedWhenTheServerAsksForIt() throws {
        let (server, port) = try startServer()
        let context = try TLSContext(
            client: TLSClientConfiguration(
                trust: .caFile(pki.rootCertificateFile),
                certificateFile: pki.client.certificateFile,
                privateKeyFile: pki.client.privateKeyFile
            )
        )
        let engine = try context.makeClientEngine(serverName: "localhost")
        let (received, failure) = try exchange(engine, port: port)
        let output = String(decoding: try server.readStandardOutput(timeout: .seconds(20)), as: UTF8.self)
        #expect(failure == nil)
        #expect(received == Array("peer spout-client\n".utf8))
        #expect(output.contains("peer spout-client"), "\(output)")
        #expect(engine.session?.serverName == "localhost")
    }

    @Test func withoutAClientCertificateTheServerRefusesTheClient() throws {
        let (server, port) = try startServer()
        let context = try TLSContext(client: TLSClientConfiguration(trust: .caFile(pki.rootCertificateFile)))
        let (received, failure) = try exchange(try context.makeClientEngine(serverName: "localhost"), port: port)
        let output = String(decoding: try server.readStandardOutput(timeout: .seconds(20)), as: UTF8.self)
        #expect(received.isEmpty)
        #expect(failure?.reason == .alertReceived, "\(String(describing: failure))")
        #expect(output.contains("handshake-failed"), "\(output)")
    }

    @Test func theClientRefusesARealServerWhoseCertificateIsNotTrusted() throws {
        let (server, port) = try startServer()
        // Trusting only another CA.
        let context = try TLSContext(client: TLSClientConfiguration(trust: .caFile(pki.untrustedRootCertificateFile)))
        let (_, failure) = try exchange(try context.makeClientEngine(serverName: "localhost"), port: port)
        _ = try server.readStandardOutput(timeout: .seconds(20))
        #expect(failure?.reason == .untrustedCertificate, "\(String(describing: failure))")
    }
}
