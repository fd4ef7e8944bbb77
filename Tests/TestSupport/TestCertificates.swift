import Foundation
import Glibc
import Synchronization

/// A throwaway public-key infrastructure for TLS tests, made with the `openssl` command-line tool in a temporary
/// directory: a root CA, an intermediate CA under it, and certificates (ECDSA P-256) for the cases the tests need.
///
///     let pki = try TestCertificates()
///     // server: pki.server.certificateFile (leaf + intermediate), pki.server.privateKeyFile
///     // clients trust pki.rootCertificateFile only
///
/// - ``server``: `localhost` and `127.0.0.1`, valid 30 days, its chain file holds the leaf then the intermediate
///   (clients trusting only the root succeed only when the chain is sent).
/// - ``otherHost``: `other.example` only, same chain: a wrong host name for a client connecting to `localhost`.
/// - ``expired``: `localhost`, expired yesterday, same chain.
/// - ``untrusted``: `localhost`, from a CA no client trusts (its own root, ``untrustedRootCertificateFile``).
/// - ``client``: a client certificate (`CN=spout-client`, clientAuth) from the intermediate.
///
/// ``write(_:contents:)`` adds files (a garbage certificate, a replacement for a reload test).
///
/// Making them takes about a second of `openssl` runs: tests that only read the files use ``shared()``, one set for
/// the whole test process, removed when it exits; a test that writes files gives them names of its own.
///
/// **Ownership:** The test owns it; `deinit` removes the directory. The shared one lives until the process exits.
/// **Thread safety:** Immutable after `init`; the paths may be read from any thread.
public final class TestCertificates: Sendable {
    /// A certificate chain file and its private key.
    public struct Identity: Sendable {
        public let certificateFile: String
        public let privateKeyFile: String

        public init(certificateFile: String, privateKeyFile: String) {
            self.certificateFile = certificateFile
            self.privateKeyFile = privateKeyFile
        }
    }

    public enum Failure: Error, CustomStringConvertible {
        case opensslMissing
        case curlMissing
        case commandFailed(arguments: [String], output: String)

        public var description: String {
            switch self {
            case .opensslMissing:
                "the openssl command-line tool is not on PATH (apt-get install -y openssl)"
            case .curlMissing:
                "curl is not on PATH (apt-get install -y curl)"
            case .commandFailed(let arguments, let output):
                "openssl \(arguments.joined(separator: " ")) failed:\n\(output)"
            }
        }
    }

    public let directory: String
    /// The Unix time (seconds) just before the certificates were made: their notBefore, within the time making
    /// them took.
    public let madeAt: Int64
    public let rootCertificateFile: String
    public let untrustedRootCertificateFile: String
    public let server: Identity
    public let otherHost: Identity
    public let expired: Identity
    public let untrusted: Identity
    public let client: Identity

    /// One set for the whole test process, made on first use; its directory is removed when the process exits.
    public static func shared() throws -> TestCertificates {
        try sharedSet.get()
    }

    private static let sharedSet: Result<TestCertificates, any Error> = {
        let result = Result { try TestCertificates() }
        if case .success(let certificates) = result {
            sharedDirectory.withLock { $0 = certificates.directory }
            atexit {
                if let directory = TestCertificates.sharedDirectory.withLock({ $0 }) {
                    try? FileManager.default.removeItem(atPath: directory)
                }
            }
        }
        return result
    }()

    /// The shared set's directory, for the exit handler (which cannot capture).
    private static let sharedDirectory = Mutex<String?>(nil)

    /// Makes every certificate (about a second).
    public init() throws {
        guard let openssl = Self.executable("openssl") else { throw Failure.opensslMissing }
        madeAt = Int64(Date().timeIntervalSince1970)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spout-pki-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        self.directory = directory
        let maker = Maker(openssl: openssl, directory: directory)
        do {
            let root = try maker.authority("root", subject: "/CN=Spout Test Root CA", issuer: nil)
            let intermediate = try maker.authority(
                "intermediate",
                subject: "/CN=Spout Test Intermediate CA",
                issuer: root
            )
            let rogue = try maker.authority("rogue", subject: "/CN=Spout Untrusted CA", issuer: nil)
            rootCertificateFile = root.certificate
            untrustedRootCertificateFile = rogue.certificate
            server = try maker.leaf("server", names: "DNS:localhost,IP:127.0.0.1", days: 30, issuer: intermediate)
            otherHost = try maker.leaf("other-host", names: "DNS:other.example", days: 30, issuer: intermediate)
            expired = try maker.leaf("expired", names: "DNS:localhost,IP:127.0.0.1", days: -1, issuer: intermediate)
            untrusted = try maker.leaf("untrusted", names: "DNS:localhost,IP:127.0.0.1", days: 30, issuer: rogue)
            client = try maker.leaf("client", names: nil, days: 30, issuer: intermediate)
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
    }

    deinit {
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Makes another server certificate for `localhost` from the intermediate, valid `days` (files named `name`).
    public func makeServerIdentity(_ name: String, days: Int) throws -> Identity {
        guard let openssl = Self.executable("openssl") else { throw Failure.opensslMissing }
        let maker = Maker(openssl: openssl, directory: directory)
        let intermediate = Maker.Authority(
            certificate: "\(directory)/intermediate.crt",
            key: "\(directory)/intermediate.key",
            chain: ["\(directory)/intermediate.crt"]
        )
        return try maker.leaf(name, names: "DNS:localhost,IP:127.0.0.1", days: days, issuer: intermediate)
    }

    /// Makes a DER OCSP response saying that `identity`'s certificate (the first of its chain file, issued by the
    /// intermediate CA) is good, as a CA's responder answers and `openssl ocsp -respout` writes it for a server to
    /// staple: a request for the certificate, then the intermediate answering it as its own responder from a
    /// one-line CA index. Returns the response file's path (`name`).
    public func makeOCSPResponse(for identity: Identity, name: String) throws -> String {
        guard let openssl = Self.executable("openssl") else { throw Failure.opensslMissing }
        let maker = Maker(openssl: openssl, directory: directory)
        let serial =
            try maker.output(["x509", "-in", identity.certificateFile, "-noout", "-serial"])
            .split(separator: "=").last.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) } ?? ""
        let index = try write("\(name).index", contents: "V\t301231235959Z\t\t\(serial)\tunknown\t/CN=server\n")
        let request = "\(directory)/\(name).req"
        let response = "\(directory)/\(name)"
        let intermediate = "\(directory)/intermediate.crt"
        _ = try maker.output([
            "ocsp", "-issuer", intermediate, "-cert", identity.certificateFile, "-no_nonce", "-reqout", request,
        ])
        _ = try maker.output([
            "ocsp", "-index", index, "-rsigner", intermediate, "-rkey", "\(directory)/intermediate.key", "-CA",
            intermediate, "-reqin", request, "-respout", response, "-ndays", "1",
        ])
        return response
    }

    /// Runs `openssl s_client -status` against `127.0.0.1:port` (SNI `localhost`, trusting the test root), sending
    /// nothing: its standard output, which says whether the server stapled an OCSP response ("OCSP Response
    /// Status: successful") or not ("OCSP response: no response sent").
    public func statusRequest(port: Int) throws -> String {
        guard let openssl = Self.executable("openssl") else { throw Failure.opensslMissing }
        let child = try ChildProcess(
            executable: openssl,
            arguments: [
                "s_client", "-connect", "127.0.0.1:\(port)", "-servername", "localhost", "-status", "-CAfile",
                rootCertificateFile,
            ],
            standardOutput: .pipe,
            standardError: .null
        )
        let output = try child.readStandardOutput(timeout: .seconds(30))
        _ = child.wait(timeout: .seconds(10))
        return String(decoding: output, as: UTF8.self)
    }

    /// Writes `contents` to a file of the directory; returns its path.
    @discardableResult
    public func write(_ name: String, contents: String) throws -> String {
        let path = "\(directory)/\(name)"
        try contents.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// Copies `identity`'s files over `target`'s (as cert-manager replaces a mounted secret's files).
    public func copy(_ identity: Identity, over target: Identity) throws {
        for (source, destination) in [
            (identity.certificateFile, target.certificateFile), (identity.privateKeyFile, target.privateKeyFile),
        ] {
            let data = try Data(contentsOf: URL(fileURLWithPath: source))
            try data.write(to: URL(fileURLWithPath: destination), options: .atomic)
        }
    }

    /// Whether TLS tests must run and fail rather than be skipped (CI sets `SPOUT_REQUIRE_OPENSSL=1`, and installs
    /// the `openssl` tool and Python).
    public static var isRequired: Bool {
        let value = ProcessInfo.processInfo.environment["SPOUT_REQUIRE_OPENSSL"] ?? ""
        return !value.isEmpty && value != "0"
    }

    /// Whether the tests that make certificates run: when the `openssl` tool is installed, or when they are required.
    /// (`swift test` on a machine with only the toolchain skips them.)
    public static var testsEnabled: Bool { isRequired || executable("openssl") != nil }

    /// Whether the tests that also run Python's `ssl` as the peer run: `python3` installed, or TLS tests required.
    public static var pythonTestsEnabled: Bool { isRequired || (testsEnabled && executable("python3") != nil) }

    /// Runs curl trusting only this root: `GET https://localhost:port` + `path`, `localhost` resolved to 127.0.0.1
    /// (so the certificate's name is checked), with `arguments` before the URL. Returns curl's exit status (nil when
    /// it did not end in time) and what it wrote to standard output.
    public func curl(port: Int, path: String, arguments: [String] = []) throws -> (status: Int32?, output: [UInt8]) {
        guard let curl = Self.executable("curl") else { throw Failure.curlMissing }
        let child = try ChildProcess(
            executable: curl,
            arguments: [
                "-sS", "--max-time", "30", "--cacert", rootCertificateFile, "--resolve", "localhost:\(port):127.0.0.1",
            ] + arguments + ["https://localhost:\(port)\(path)"],
            standardOutput: .pipe,
            standardError: .null
        )
        let output = try child.readStandardOutput(timeout: .seconds(40))
        return (child.wait(timeout: .seconds(10))?.exitStatus, output)
    }

    /// `name` on `PATH`, or nil.
    public static func executable(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// Runs the openssl commands in the directory.
    private struct Maker {
        struct Authority {
            let certificate: String
            let key: String
            /// The certificates a leaf's chain file carries after the leaf (the intermediates), in order.
            let chain: [String]
        }

        let openssl: String
        let directory: String

        func authority(_ name: String, subject: String, issuer: Authority?) throws -> Authority {
            let key = "\(directory)/\(name).key"
            let certificate = "\(directory)/\(name).crt"
            let extensions = try file(
                "\(name).ext",
                """
                basicConstraints = critical,CA:TRUE
                keyUsage = critical,keyCertSign,cRLSign
                subjectKeyIdentifier = hash

                """
            )
            try request(name, subject: subject)
            if let issuer {
                try sign(name, extensions: extensions, days: 60, issuer: issuer)
                return Authority(certificate: certificate, key: key, chain: [certificate])
            }
            try run([
                "x509", "-req", "-in", "\(directory)/\(name).csr", "-signkey", key, "-days", "60", "-out", certificate,
                "-extfile", extensions, "-set_serial", "1",
            ])
            return Authority(certificate: certificate, key: key, chain: [])
        }

        func leaf(_ name: String, names: String?, days: Int, issuer: Authority) throws -> Identity {
            var lines = [
                "basicConstraints = critical,CA:FALSE",
                "keyUsage = critical,digitalSignature",
                "extendedKeyUsage = \(names == nil ? "clientAuth" : "serverAuth,clientAuth")",
                "subjectKeyIdentifier = hash",
                "authorityKeyIdentifier = keyid",
            ]
            if let names { lines.append("subjectAltName = \(names)") }
            let extensions = try file("\(name).ext", lines.joined(separator: "\n") + "\n")
            try request(name, subject: names == nil ? "/CN=spout-client" : "/CN=\(name)")
            try sign(name, extensions: extensions, days: days, issuer: issuer)
            // The chain file: the leaf, then the intermediates.
            let leaf = try String(contentsOfFile: "\(directory)/\(name).crt", encoding: .utf8)
            let intermediates = try issuer.chain.map { try String(contentsOfFile: $0, encoding: .utf8) }
            let chain = try file("\(name)-chain.crt", ([leaf] + intermediates).joined())
            return Identity(certificateFile: chain, privateKeyFile: "\(directory)/\(name).key")
        }

        private func request(_ name: String, subject: String) throws {
            let config = try file("req.cnf", "[req]\ndistinguished_name = dn\n[dn]\n")
            try run([
                "req", "-new", "-config", config, "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                "-nodes", "-keyout", "\(directory)/\(name).key", "-out", "\(directory)/\(name).csr", "-subj", subject,
            ])
        }

        private func sign(_ name: String, extensions: String, days: Int, issuer: Authority) throws {
            try run([
                "x509", "-req", "-in", "\(directory)/\(name).csr", "-CA", issuer.certificate, "-CAkey", issuer.key,
                "-set_serial", String(UInt32.random(in: 2...UInt32.max)), "-days", String(days), "-extfile",
                extensions, "-out", "\(directory)/\(name).crt",
            ])
        }

        private func file(_ name: String, _ contents: String) throws -> String {
            let path = "\(directory)/\(name)"
            try contents.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }

        private func run(_ arguments: [String]) throws {
            _ = try output(arguments)
        }

        /// Runs openssl with `arguments`; its standard output (and error), or the failure.
        func output(_ arguments: [String]) throws -> String {
            let child = try ChildProcess(
                executable: openssl,
                arguments: arguments,
                standardOutput: .pipe,
                standardError: .standardOutput
            )
            let output = try child.readStandardOutput(timeout: .seconds(30))
            guard child.wait(timeout: .seconds(30)) == .exited(0) else {
                throw Failure.commandFailed(arguments: arguments, output: String(decoding: output, as: UTF8.self))
            }
            return String(decoding: output, as: UTF8.self)
        }
    }
}
