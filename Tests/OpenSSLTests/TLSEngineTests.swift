import OpenSSL
import TestSupport
import Testing

/// A client and a server ``TLSEngine`` pumped in memory (``TLSPump``), with certificates made by the tests.
@Suite struct TLSEngineTests {
    let pki: TestCertificates

    init() throws {
        pki = try TestCertificates.shared()
    }

    func serverContext(_ identity: TestCertificates.Identity? = nil, alpn: [String] = ["http/1.1"]) throws -> TLSContext
    {
        let identity = identity ?? pki.server
        return try TLSContext(
            server: TLSServerConfiguration(
                certificateFile: identity.certificateFile,
                privateKeyFile: identity.privateKeyFile,
                applicationProtocols: alpn
            )
        )
    }

    func clientContext(trust: String? = nil, alpn: [String] = []) throws -> TLSContext {
        try TLSContext(
            client: TLSClientConfiguration(trust: .caFile(trust ?? pki.rootCertificateFile), applicationProtocols: alpn)
        )
    }

    func connect(
        server: TLSContext,
        client: TLSContext,
        serverName: String = "localhost"
    ) throws -> (client: TLSEngine, server: TLSEngine, results: (TLSEngine.HandshakeResult, TLSEngine.HandshakeResult))
    {
        let clientEngine = try client.makeClientEngine(serverName: serverName)
        let serverEngine = try server.makeServerEngine()
        let results = TLSPump.handshake(client: clientEngine, server: serverEngine)
        return (clientEngine, serverEngine, (results.client, results.server))
    }

    static func failure(_ result: TLSEngine.HandshakeResult) -> TLSFailure? {
        if case .failed(let failure) = result { return failure }
        return nil
    }

    // MARK: Handshake

    @Test func handshakeCompletesWithTLS13SNIAndTheChainVerifiedAgainstTheRootOnly() throws {
        let (client, server, results) = try connect(server: try serverContext(), client: try clientContext())
        guard case .complete(let clientSession) = results.0, case .complete(let serverSession) = results.1 else {
            Issue.record("handshake did not complete: \(results)")
            return
        }
        #expect(clientSession.protocolVersion == "TLSv1.3")
        #expect(serverSession.protocolVersion == "TLSv1.3")
        #expect(serverSession.cipherSuite == clientSession.cipherSuite)
        #expect(serverSession.cipherSuite.hasPrefix("TLS_"))
        #expect(serverSession.serverName == "localhost")
        #expect(clientSession.applicationProtocol == nil)  // the client offered none
        #expect(client.session == clientSession && server.session == serverSession)
        #expect(!serverSession.resumed)
    }

    @Test func readAndWriteBeforeTheHandshakeCompletesWaitForInput() throws {
        let client = try clientContext().makeClientEngine(serverName: "localhost")
        let server = try serverContext().makeServerEngine()
        var buffer = [UInt8](repeating: 0, count: 16)
        #expect(buffer.withUnsafeMutableBytes { server.read(into: $0) } == .wantInput)
        #expect(server.write([1, 2, 3]) == .wantInput)
        #expect(client.write([1, 2, 3]) == .wantInput)  // runs the handshake: a ClientHello to send
        #expect(client.pendingOutputCount > 0)
        #expect(client.session == nil)
    }

    // MARK: ALPN

    @Test func alpnPicksTheServersMostPreferredProtocolTheClientOffers() throws {
        let server = try serverContext(alpn: ["h2", "http/1.1"])
        let both = try connect(server: server, client: try clientContext(alpn: ["http/1.1", "h2"]))
        #expect(both.client.session?.applicationProtocol == "h2")
        #expect(both.server.session?.applicationProtocol == "h2")
        let onlyHTTP1 = try connect(server: server, client: try clientContext(alpn: ["http/1.1"]))
        #expect(onlyHTTP1.server.session?.applicationProtocol == "http/1.1")
        #expect(onlyHTTP1.client.session?.applicationProtocol == "http/1.1")
    }

    @Test func aClientOfferingNoProtocolWeSpeakIsServedWithoutALPN() throws {
        let (client, server, _) = try connect(
            server: try serverContext(alpn: ["http/1.1"]),
            client: try clientContext(alpn: ["spdy/3"])
        )
        #expect(server.session != nil && client.session != nil)
        #expect(server.session?.applicationProtocol == nil)
    }

    // MARK: Data and close

    @Test func dataFlowsBothWaysAcrossManyRecords() throws {
        let (client, server, _) = try connect(server: try serverContext(), client: try clientContext())
        let request = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        #expect(TLSPump.send(request, from: client, to: server) == request)
        let response = (0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        #expect(TLSPump.send(response, from: server, to: client) == response)
    }

    @Test func closeNotifyEndsBothSidesCleanly() throws {
        let (client, server, _) = try connect(server: try serverContext(), client: try clientContext())
        #expect(client.shutdown() == .sent)
        #expect(client.sentCloseNotify)
        TLSPump.transfer(from: client, to: server)
        var buffer = [UInt8](repeating: 0, count: 64)
        #expect(buffer.withUnsafeMutableBytes { server.read(into: $0) } == .closed)
        #expect(server.receivedCloseNotify)
        #expect(server.shutdown() == .complete)
        TLSPump.transfer(from: server, to: client)
        #expect(buffer.withUnsafeMutableBytes { client.read(into: $0) } == .closed)
        #expect(client.receivedCloseNotify)
        // Nothing is written after our close_notify.
        if case .failed = client.write([1]) {} else { Issue.record("a write after shutdown was taken") }
    }

    @Test func plaintextSentBeforeTheCloseNotifyIsReadBeforeTheEnd() throws {
        let (client, server, _) = try connect(server: try serverContext(), client: try clientContext())
        #expect(client.write(Array("last words".utf8)) == .wrote(10))
        #expect(client.shutdown() == .sent)
        TLSPump.transfer(from: client, to: server)
        var buffer = [UInt8](repeating: 0, count: 64)
        #expect(buffer.withUnsafeMutableBytes { server.read(into: $0) } == .bytes(10))
        #expect(Array(buffer[..<10]) == Array("last words".utf8))
        #expect(buffer.withUnsafeMutableBytes { server.read(into: $0) } == .closed)
    }

    // MARK: Verification failures

    @Test func aServerFromAnUntrustedCAFailsVerification() throws {
        let (_, server, results) = try connect(server: try serverContext(pki.untrusted), client: try clientContext())
        let failure = try #require(Self.failure(results.0))
        #expect(failure.reason == .untrustedCertificate)
        #expect(failure.message.contains("certificate verify failed"))
        // The server hears of it from the client's alert.
        #expect(Self.failure(results.1)?.reason == .alertReceived)
        #expect(server.session == nil)
    }

    @Test func aServerCertificateForAnotherHostFailsVerification() throws {
        let (_, _, results) = try connect(server: try serverContext(pki.otherHost), client: try clientContext())
        let failure = try #require(Self.failure(results.0))
        #expect(failure.reason == .hostnameMismatch)
        // The same certificate is fine for the name it is for.
        let right = try connect(
            server: try serverContext(pki.otherHost),
            client: try clientContext(),
            serverName: "other.example"
        )
        #expect(right.client.session != nil)
    }

    @Test func anExpiredServerCertificateFailsVerification() throws {
        let (_, _, results) = try connect(server: try serverContext(pki.expired), client: try clientContext())
        let failure = try #require(Self.failure(results.0))
        #expect(failure.reason == .certificateExpired)
        #expect(failure.message.contains("expired"))
    }

    @Test func theIPAddressOfTheCertificateIsVerifiedWithoutSNI() throws {
        let (client, server, _) = try connect(
            server: try serverContext(),
            client: try clientContext(),
            serverName: "127.0.0.1"
        )
        #expect(client.session != nil)
        #expect(server.session?.serverName == nil)  // no SNI for an address
        let wrong = try connect(server: try serverContext(), client: try clientContext(), serverName: "127.0.0.2")
        #expect(Self.failure(wrong.results.0)?.reason == .hostnameMismatch)
    }

    // MARK: Hostile input

    @Test func plainHTTPToTheServerIsAnErrorThatSaysSo() throws {
        let server = try serverContext().makeServerEngine()
        server.feed(Array("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8))
        let failure = try #require(Self.failure(server.handshake()))
        #expect(failure.reason == .plaintextHTTP)
        #expect(server.failure == failure)
        // It stays failed, takes and drops what comes next.
        #expect(server.feed([UInt8](repeating: 0x16, count: 1_000_000)) == 1_000_000)
        #expect(server.handshake() == .failed(failure))
        var buffer = [UInt8](repeating: 0, count: 8)
        #expect(buffer.withUnsafeMutableBytes { server.read(into: $0) } == .failed(failure))
        #expect(server.shutdown() == .failed(failure))
    }

    @Test func garbageToTheServerIsAProtocolErrorNeverACrash() throws {
        let context = try serverContext()
        var generator = SplitMix64(seed: 29)
        for round in 0..<200 {
            let server = try context.makeServerEngine()
            let count = Int(generator.next() % 600) + 1
            var bytes = (0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            if round % 2 == 0 {
                // A plausible record header (handshake, TLS 1.0 record version) over random contents.
                bytes.replaceSubrange(0..<min(3, count), with: [0x16, 0x03, 0x01].prefix(count))
            }
            var result = TLSEngine.HandshakeResult.wantInput
            var offset = 0
            while offset < bytes.count, case .wantInput = result {
                offset += server.feed(bytes[offset...])
                result = server.handshake()
            }
            switch result {
            case .failed(let failure):
                #expect(failure.reason != .internalError, "round \(round): \(failure)")
            case .wantInput:
                break  // an incomplete record: the owner's handshake deadline ends it
            case .complete, .outputFull:
                Issue.record("round \(round): garbage gave \(result)")
            }
        }
    }

    @Test func garbageAfterTheHandshakeFailsTheConnection() throws {
        let (_, server, _) = try connect(server: try serverContext(), client: try clientContext())
        server.feed([0x17, 0x03, 0x03, 0x00, 0x20] + [UInt8](repeating: 0xAB, count: 32))
        var buffer = [UInt8](repeating: 0, count: 64)
        let result = buffer.withUnsafeMutableBytes { server.read(into: $0) }
        guard case .failed(let failure) = result else {
            Issue.record("a forged record was read: \(result)")
            return
        }
        #expect(failure.reason == .protocolError)
        #expect(server.pendingOutputCount > 0)  // an alert for the peer
    }

    // MARK: Bounds

    @Test func inputIsTakenOnlyUpToTheLimit() throws {
        let limits = TLSEngine.Limits(maxBufferedInput: 20_000)
        let server = try serverContext().makeServerEngine(limits: limits)
        #expect(server.inputCapacity == 20_000)
        let flood = [UInt8](repeating: 0x16, count: 1_000_000)
        #expect(server.feed(flood) == 20_000)
        #expect(server.inputCapacity == 0)
        #expect(server.feed(flood) == 0)
        // Below one record the limit is raised to one record.
        #expect(TLSEngine.Limits(maxBufferedInput: 10).maxBufferedInput == 18_437)
    }

    @Test func aPeerThatNeverReadsCannotGrowTheOutput() throws {
        let limits = TLSEngine.Limits(maxBufferedOutput: 32 * 1024)
        let client = try clientContext().makeClientEngine(serverName: "localhost")
        let server = try serverContext().makeServerEngine(limits: limits)
        _ = TLSPump.handshake(client: client, server: server)
        _ = server.takeOutput()
        let body = [UInt8](repeating: 0x61, count: 1_000_000)
        var written = 0
        var sawFull = false
        for _ in 0..<100 {
            switch server.write(body[written...]) {
            case .wrote(let count): written += count
            case .outputFull: sawFull = true
            default: Issue.record("unexpected write result")
            }
            if sawFull { break }
        }
        #expect(sawFull)
        #expect(written < 64 * 1024)
        #expect(server.pendingOutputCount <= 32 * 1024 + 16_384 + 256)
        // Draining makes room again.
        _ = server.takeOutput()
        if case .wrote(let count) = server.write(body[written...]) {
            #expect(count > 0)
        } else {
            Issue.record("no write after draining")
        }
    }

    @Test func aClientEngineNeedsAServerName() throws {
        #expect(throws: TLSError.self) { try clientContext().makeClientEngine(serverName: "") }
    }
}

/// A small deterministic generator for the garbage rounds.
struct SplitMix64 {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
