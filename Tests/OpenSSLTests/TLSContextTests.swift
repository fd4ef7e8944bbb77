import Foundation
import OpenSSL
import TestSupport
import Testing

/// Making ``TLSContext``s from files, their errors, the expiry fact, and ``TLSReloadableContext``.
@Suite(.enabled(if: TestCertificates.testsEnabled)) struct TLSContextTests {
    let pki: TestCertificates

    init() throws {
        pki = try TestCertificates.shared()
    }

    func configuration(_ identity: TestCertificates.Identity) -> TLSServerConfiguration {
        TLSServerConfiguration(certificateFile: identity.certificateFile, privateKeyFile: identity.privateKeyFile)
    }

    /// Paths of this test's own for the files a service would be configured with (the shared set is read by
    /// other tests at the same time).
    func liveFiles() -> TestCertificates.Identity {
        let name = "live-\(UUID().uuidString)"
        return TestCertificates.Identity(
            certificateFile: "\(pki.directory)/\(name).crt",
            privateKeyFile: "\(pki.directory)/\(name).key"
        )
    }

    func name(of path: String) -> String {
        String(path.split(separator: "/").last ?? "")
    }

    @Test func theLibraryIsAvailableHere() throws {
        try TLSContext.checkLibrary()
    }

    @Test func aMissingLibraryIsAClearError() throws {
        #expect(throws: TLSError.libraryUnavailable("libssl.so.99 (OpenSSL 3) could not be loaded")) {
            try TLSContext.checkLibrary(ssl: ["libssl.so.99"], crypto: ["libcrypto.so.3"])
        }
        // A library that loads but is not OpenSSL's: the first function missing is named.
        #expect(throws: TLSError.libraryUnavailable("OpenSSL 3 lacks TLS_server_method")) {
            try TLSContext.checkLibrary(ssl: ["libc.so.6"], crypto: ["libcrypto.so.3"])
        }
        #expect(
            TLSError.libraryUnavailable("libssl.so.3 (OpenSSL 3) could not be loaded").description
                == "tls is unavailable: libssl.so.3 (OpenSSL 3) could not be loaded"
        )
    }

    @Test func theCertificateExpiryIsItsNotAfter() throws {
        let now = Int64(Date().timeIntervalSince1970)
        let valid = try TLSContext(server: configuration(pki.server))
        let expiry = try #require(valid.certificateExpiry)
        // Valid 30 days from when it was made, which took less than a minute.
        let thirtyDays: Int64 = 30 * 86_400
        #expect(expiry >= pki.madeAt + thirtyDays && expiry <= pki.madeAt + thirtyDays + 60)
        let expired = try TLSContext(server: configuration(pki.expired))
        #expect(try #require(expired.certificateExpiry) < now)
        #expect(
            try TLSContext(client: TLSClientConfiguration(trust: .caFile(pki.rootCertificateFile)))
                .certificateExpiry == nil
        )
    }

    @Test func aMissingCertificateFileNamesTheFile() throws {
        let missing = "\(pki.directory)/nope.crt"
        #expect {
            try TLSContext(
                server: TLSServerConfiguration(certificateFile: missing, privateKeyFile: pki.server.privateKeyFile)
            )
        } throws: { error in
            guard case .certificateFile(let path, let reason) = error as? TLSError else { return false }
            return path == missing && !reason.isEmpty
        }
    }

    @Test func aFileThatIsNotPEMIsRefused() throws {
        let garbage = try pki.write("garbage-\(UUID().uuidString).crt", contents: "this is not a certificate\n")
        #expect {
            try TLSContext(
                server: TLSServerConfiguration(certificateFile: garbage, privateKeyFile: pki.server.privateKeyFile)
            )
        } throws: { error in
            guard case .certificateFile(let path, _) = error as? TLSError else { return false }
            return path == garbage
        }
        #expect {
            try TLSContext(
                server: TLSServerConfiguration(certificateFile: pki.server.certificateFile, privateKeyFile: garbage)
            )
        } throws: { error in
            guard case .privateKeyFile(let path, _) = error as? TLSError else { return false }
            return path == garbage
        }
    }

    @Test func aKeyOfAnotherCertificateIsRefused() throws {
        let mismatched = TLSServerConfiguration(
            certificateFile: pki.server.certificateFile,
            privateKeyFile: pki.otherHost.privateKeyFile
        )
        #expect {
            try TLSContext(server: mismatched)
        } throws: { error in
            guard case .privateKeyFile(let path, _) = error as? TLSError else { return false }
            return path == pki.otherHost.privateKeyFile
        }
        let client = TLSClientConfiguration(
            trust: .system,
            certificateFile: pki.client.certificateFile,
            privateKeyFile: pki.server.privateKeyFile
        )
        #expect(throws: TLSError.self) { try TLSContext(client: client) }
    }

    @Test func aClientTakesTheSystemStoreACAFileAndAClientCertificate() throws {
        _ = try TLSContext(client: TLSClientConfiguration(trust: .system))
        _ = try TLSContext(
            client: TLSClientConfiguration(
                trust: .caFile(pki.rootCertificateFile),
                certificateFile: pki.client.certificateFile,
                privateKeyFile: pki.client.privateKeyFile
            )
        )
        let missing = "\(pki.directory)/no-ca.pem"
        #expect {
            try TLSContext(client: TLSClientConfiguration(trust: .caFile(missing)))
        } throws: { error in
            guard case .caFile(let path, _) = error as? TLSError else { return false }
            return path == missing
        }
        #expect(throws: TLSError.self) {
            try TLSContext(client: TLSClientConfiguration(certificateFile: pki.client.certificateFile))
        }
    }

    @Test func aBadOCSPResponseFileIsRefusedNamingItAndWhy() throws {
        let good = try pki.makeOCSPResponse(for: pki.server, name: "context-ocsp-\(UUID().uuidString).der")
        var configuration = configuration(pki.server)
        configuration.ocspResponseFile = good
        _ = try TLSContext(server: configuration)

        let cases: [(path: String, reason: String)] = [
            ("\(pki.directory)/no-such-ocsp.der", "No such file or directory"),
            (try pki.write("context-ocsp-empty.der", contents: ""), "empty"),
            (try pki.write("context-ocsp-garbage.der", contents: "not der"), "not a DER OCSP response"),
            // A certificate is DER too, but not an OCSP response.
            (try derCertificate(), "not a DER OCSP response"),
            (try trailing(good), "bytes after the DER OCSP response"),
        ]
        for (path, reason) in cases {
            configuration.ocspResponseFile = path
            #expect {
                try TLSContext(server: configuration)
            } throws: { error in
                guard case .ocspResponseFile(let named, let text) = error as? TLSError else { return false }
                return named == path && text.contains(reason)
            }
        }
    }

    /// The server's certificate in DER: a well-formed DER file that is no OCSP response.
    private func derCertificate() throws -> String {
        let path = "\(pki.directory)/context-ocsp-certificate-\(UUID().uuidString).der"
        let child = try ChildProcess(
            executable: try #require(TestCertificates.executable("openssl")),
            arguments: ["x509", "-in", pki.server.certificateFile, "-outform", "DER", "-out", path]
        )
        _ = try child.readStandardOutput()
        #expect(child.wait() == .exited(0))
        return path
    }

    /// A copy of the response at `path` with a byte after it.
    private func trailing(_ path: String) throws -> String {
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        bytes.append(0)
        let copy = "\(path).trailing"
        try bytes.write(to: URL(fileURLWithPath: copy))
        return copy
    }

    @Test func anInvalidALPNNameIsRefused() throws {
        var configuration = configuration(pki.server)
        configuration.applicationProtocols = ["http/1.1", ""]
        #expect(throws: TLSError.configuration("an ALPN protocol name must be 1 to 255 bytes: \"\"")) {
            try TLSContext(server: configuration)
        }
    }

    // MARK: Reload

    @Test func reloadTakesNewFilesAndKeepsOpenConnectionsOnTheOldContext() throws {
        // The live files, as a mounted secret: a copy of `server` the test replaces.
        let live = liveFiles()
        try pki.copy(pki.server, over: live)
        let reloadable = try TLSReloadableContext(configuration(live))
        let first = reloadable.current
        let openConnection = try first.makeServerEngine()

        let renewed = try pki.makeServerIdentity("renewed-\(UUID().uuidString)", days: 90)
        try pki.copy(renewed, over: live)
        let second = try reloadable.reload().get()
        #expect(reloadable.current === second)
        #expect(second !== first)
        let firstExpiry = try #require(first.certificateExpiry)
        let secondExpiry = try #require(second.certificateExpiry)
        let sixtyDays: Int64 = 60 * 86_400
        #expect(secondExpiry - firstExpiry > sixtyDays - 60)

        // The connection that started before the reload finishes its handshake on the old context.
        let client = try TLSContext(client: TLSClientConfiguration(trust: .caFile(pki.rootCertificateFile)))
            .makeClientEngine(serverName: "localhost")
        let results = TLSPump.handshake(client: client, server: openConnection)
        guard case .complete = results.server else {
            Issue.record("the old connection failed: \(results)")
            return
        }
        #expect(openConnection.context === first)
    }

    @Test func aBadFileOnReloadKeepsTheOldContextAndSaysWhy() throws {
        let live = liveFiles()
        try pki.copy(pki.server, over: live)
        let reloadable = try TLSReloadableContext(configuration(live))
        let before = reloadable.current

        // A half-written certificate.
        let text = try String(contentsOfFile: pki.server.certificateFile, encoding: .utf8)
        try pki.write(name(of: live.certificateFile), contents: String(text.prefix(200)))
        guard case .failure(let error) = reloadable.reload() else {
            Issue.record("a truncated certificate was taken")
            return
        }
        guard case .certificateFile(let path, _) = error else {
            Issue.record("unexpected error \(error)")
            return
        }
        #expect(path == live.certificateFile)
        #expect(reloadable.current === before)

        // A key that does not match the certificate.
        try pki.copy(pki.server, over: live)
        try pki.write(
            name(of: live.privateKeyFile),
            contents: try String(contentsOfFile: pki.otherHost.privateKeyFile, encoding: .utf8)
        )
        guard case .failure(.privateKeyFile) = reloadable.reload() else {
            Issue.record("a mismatched key was taken")
            return
        }
        #expect(reloadable.current === before)

        // The files fixed, the next reload takes them.
        try pki.copy(pki.server, over: live)
        let fixed = try reloadable.reload().get()
        #expect(reloadable.current === fixed && fixed !== before)
    }

    @Test func aServerThatCannotStartSaysWhichFile() throws {
        #expect {
            try TLSReloadableContext(
                TLSServerConfiguration(certificateFile: "/nonexistent/tls.crt", privateKeyFile: "/nonexistent/tls.key")
            )
        } throws: { error in
            (error as? TLSError)?.description.contains("/nonexistent/tls.crt") == true
        }
    }
}
