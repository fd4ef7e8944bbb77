import Dispatch
import Foundation
import HTTPServer
import Sequences
import Synchronization
import TestSupport

@testable import Spout

/// A Spout service on an ephemeral loopback port, with its log kept in memory and its sequence
/// producers watched by probes.
final class SpoutTestServer: Sendable {
    let service: SpoutService
    let log: MemoryLogSink
    /// The service's own messages (listening, draining, Redis going away and back), apart from the request log.
    let events = MemoryLogSink()
    private let probes = TestBox<[SequenceProbe]>([])

    /// - Parameter tlsFileCheckInterval: How often the TLS files are checked for a change.
    init(
        tlsFileCheckInterval: Duration = .seconds(10),
        _ configure: (inout SpoutConfiguration) -> Void = { _ in }
    ) throws {
        var configuration = SpoutConfiguration()
        configuration.port = 0
        configuration.eventLoops = 2
        // The upstream route tests count the demo upstream's requests in the log (the service's own calls,
        // left out by default); tests of that rule turn it off again.
        configuration.log.selfCalls = true
        configure(&configuration)
        let log = MemoryLogSink()
        let probes = self.probes
        self.log = log
        service = try SpoutService.start(
            configuration: configuration,
            log: log,
            events: EventLog(sink: events, level: .debug),
            hooks: ServiceHooks(
                makeSequenceProbe: { _ in
                    let probe = SequenceProbe()
                    probes.update { $0.append(probe) }
                    return probe
                },
                tlsFileCheckInterval: tlsFileCheckInterval
            )
        )
    }

    var port: Int { service.port }

    /// The probes of the sequence streams started so far, oldest first.
    var sequenceProbes: [SequenceProbe] { probes.value }

    /// Opens a connection.
    func connect(receiveBufferBytes: Int? = nil) throws -> LoopbackClient {
        try LoopbackClient(port: port, receiveBufferBytes: receiveBufferBytes)
    }

    /// One GET on a fresh connection, read to the end.
    func get(_ path: String, headers: [String] = [], timeout: Duration = .seconds(10)) throws -> LoopbackClient.Response
    {
        let client = try connect()
        defer { client.close() }
        try client.sendGet(path, headers: headers)
        return try client.readResponse(timeout: timeout, isHead: false)
    }

    /// Checks the server still answers `/health` correctly.
    func isHealthy() -> Bool {
        guard let response = try? get("/health") else { return false }
        return response.status == 200 && response.text == #"{"status":"ok"}"#
    }

    func stop() async {
        await service.shutdown()
    }
}
