import HTTPServer
import OpenSSL

/// The `spout_tls…` metrics of a service serving HTTPS: handshakes, failed handshakes by reason, the protocol and
/// cipher of open connections, and when the served certificate expires (so an alert can fire before it lapses).
///
/// **Ownership:** Created by the service when TLS is configured; the servers' ``Server/Configuration/tlsEvents``
/// feed it.
///
/// **Thread safety:** Safe from any thread (its counters are atomic; the expiry is read from the context's lock).
final class TLSMetrics: Sendable {
    /// `spout_tls_handshakes_total{protocol}`: handshakes completed, by protocol version (`TLSv1.3`, `TLSv1.2`).
    let handshakes: CounterFamily
    /// `spout_tls_handshake_failures_total{reason}`: handshakes that failed, by ``TLSFailure/Reason``, `timeout` or
    /// `abandoned`.
    let failures: CounterFamily
    /// `spout_tls_certificate_expiry_timestamp_seconds`: the Unix time the served certificate expires.
    let certificateExpiry: SampledGauge
    /// `spout_tls_open_connections{protocol,cipher}`: connections whose handshake completed and that are still
    /// open, by protocol version and cipher suite (labels from closed sets: see ``label(protocol:)``).
    let openConnections: GaugeFamily

    /// The protocol versions a server context offers; anything else is labelled `other`.
    static let protocols: Set<String> = ["TLSv1.2", "TLSv1.3"]
    /// The cipher suites a server context offers; anything else is labelled `other`.
    static let cipherSuites = Set(TLSContext.offeredCipherSuites)

    /// The failure label of a handshake that did not complete within its deadline.
    static let timeoutReason = "timeout"
    /// The failure label of a connection closed before its handshake ended (the peer left).
    static let abandonedReason = "abandoned"

    init(registry: MetricsRegistry, context: TLSReloadableContext) {
        handshakes = registry.counter(
            "spout_tls_handshakes_total",
            help: "TLS handshakes completed, by protocol version.",
            labels: ["protocol"]
        )
        failures = registry.counter(
            "spout_tls_handshake_failures_total",
            help: "TLS handshakes that failed, by reason.",
            labels: ["reason"]
        )
        certificateExpiry = registry.sampledGauge(
            "spout_tls_certificate_expiry_timestamp_seconds",
            help: "Unix time at which the served TLS certificate expires."
        )
        openConnections = registry.gauge(
            "spout_tls_open_connections",
            help: "Open TLS connections whose handshake completed, by protocol version and cipher suite.",
            labels: ["protocol", "cipher"]
        )
        let reasons = TLSFailure.Reason.allCases.map(\.rawValue) + [Self.timeoutReason, Self.abandonedReason]
        failures.preinitialize(reasons.map { [$0] })
        certificateExpiry.sample { Int(context.current.certificateExpiry ?? 0) }
    }

    /// The `protocol` and `cipher` labels of `session`: its own names when they are among those offered (a
    /// bounded set whatever clients send), else `other`.
    static func labels(_ session: TLSSessionInfo) -> [String] {
        [
            protocols.contains(session.protocolVersion) ? session.protocolVersion : "other",
            cipherSuites.contains(session.cipherSuite) ? session.cipherSuite : "other",
        ]
    }

    /// Counts `event` (called on the connection's loop: cheap).
    func record(_ event: TLSEvent) {
        switch event {
        case .handshakeCompleted(let session):
            handshakes.increment([session.protocolVersion])
            openConnections.add(Self.labels(session), 1)
        case .connectionClosed(let session):
            openConnections.add(Self.labels(session), -1)
        case .handshakeFailed(let failure):
            failures.increment([failure.reason.rawValue])
        case .handshakeTimedOut:
            failures.increment([Self.timeoutReason])
        case .handshakeAbandoned:
            failures.increment([Self.abandonedReason])
        }
    }
}
