import OpenSSL
import RESP
import Redis

/// The Redis connections' state and counters at `GET /metrics`, read from each connection when rendered (only
/// registered when channels go through Redis). Per role: `publish` (the publisher connection) and `subscribe`
/// (the followers, summed; `up` only when all are).
///
/// - `spout_redis_up`: 1 when ready, 0 otherwise;
/// - `spout_redis_round_trip_seconds` (summary: `_sum`, `_count`): commands written on a ready connection, from
///   the write to the reply;
/// - `spout_redis_errors_total{kind}`: `connection` (lost, refused, timed out, protocol violations), `reply`
///   (error replies), `command` (commands failed without a reply);
/// - `spout_redis_reconnects_total`: times a connection became ready again;
/// - with a `rediss://` URL only, named like the HTTPS server's `spout_tls_…` metrics:
///   `spout_redis_tls_handshakes_total{protocol}` (handshakes completed, by protocol version) and
///   `spout_redis_tls_handshake_failures_total{reason}` (by ``TLSFailure/Reason``, `timeout` or `abandoned`; every
///   reason is rendered, 0 until it happens, and the labels are a closed set whatever the server sends).
///
/// **Thread safety:** safe from any thread (the connections' snapshots are locked).
final class RedisMetrics: MetricFamily, Sendable {
    private let roles: [(role: String, connections: [RedisConnection])]
    /// Whether the connections speak TLS (`rediss://`): only then are the TLS families rendered.
    private let usesTLS: Bool

    /// The `reason` labels of `spout_redis_tls_handshake_failures_total`, in order.
    static let tlsFailureReasons =
        TLSFailure.Reason.allCases.map(\.rawValue) + [
            RedisConnectionMetrics.tlsTimeoutReason, RedisConnectionMetrics.tlsAbandonedReason,
        ]

    init(publishers: [RedisConnection], followers: [RedisConnection]) {
        roles = [("publish", publishers), ("subscribe", followers)]
        usesTLS = (publishers + followers).contains { $0.configuration.url.usesTLS }
    }

    func render(into text: inout String) {
        let rows = roles.map { role, connections in
            (
                role: role,
                up: connections.allSatisfy(\.status.isConnected),
                metrics: connections.map(\.metrics)
            )
        }
        func family(_ name: String, _ type: String, _ help: String, _ value: (RedisConnectionMetrics) -> Double) {
            text += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
            for row in rows {
                text += "\(name){role=\"\(row.role)\"} \(renderNumber(row.metrics.map(value).reduce(0, +)))\n"
            }
        }
        text += "# HELP spout_redis_up Whether the role's Redis connections are ready (1) or not (0).\n"
        text += "# TYPE spout_redis_up gauge\n"
        for row in rows { text += "spout_redis_up{role=\"\(row.role)\"} \(row.up ? 1 : 0)\n" }
        let name = "spout_redis_round_trip_seconds"
        text += "# HELP \(name) Round trips of Redis commands on a ready connection.\n# TYPE \(name) summary\n"
        for row in rows {
            let seconds = row.metrics.reduce(0.0) { total, metrics in
                let (whole, fraction) = metrics.roundTripTotal.components
                return total + Double(whole) + Double(fraction) / 1e18
            }
            text += "\(name)_sum{role=\"\(row.role)\"} \(seconds)\n"
            text += "\(name)_count{role=\"\(row.role)\"} \(row.metrics.reduce(0) { $0 + $1.roundTrips })\n"
        }
        text += "# HELP spout_redis_errors_total Redis failures: connection, error reply, command failed unanswered.\n"
        text += "# TYPE spout_redis_errors_total counter\n"
        for row in rows {
            let kinds: [(String, Int)] = [
                ("connection", row.metrics.reduce(0) { $0 + $1.connectionFailures }),
                ("reply", row.metrics.reduce(0) { $0 + $1.errorReplies }),
                ("command", row.metrics.reduce(0) { $0 + $1.commandsFailed }),
            ]
            for (kind, count) in kinds {
                text += "spout_redis_errors_total{role=\"\(row.role)\",kind=\"\(kind)\"} \(count)\n"
            }
        }
        family("spout_redis_reconnects_total", "counter", "Times a Redis connection became ready again.") {
            Double($0.reconnects)
        }
        guard usesTLS else { return }
        renderTLS(rows.map { ($0.role, $0.metrics) }, into: &text)
    }

    /// The TLS families, per role: handshakes by protocol version, failures by reason.
    private func renderTLS(_ rows: [(role: String, metrics: [RedisConnectionMetrics])], into text: inout String) {
        var name = "spout_redis_tls_handshakes_total"
        text += "# HELP \(name) TLS handshakes with Redis completed, by protocol version.\n# TYPE \(name) counter\n"
        for row in rows {
            var byProtocol: [String: Int] = [:]
            for metrics in row.metrics {
                for (version, count) in metrics.tlsHandshakes {
                    byProtocol[TLSMetrics.protocols.contains(version) ? version : "other", default: 0] += count
                }
            }
            for version in TLSMetrics.protocols.sorted() + (byProtocol["other"] == nil ? [] : ["other"]) {
                text += "\(name){role=\"\(row.role)\",protocol=\"\(version)\"} \(byProtocol[version] ?? 0)\n"
            }
        }
        name = "spout_redis_tls_handshake_failures_total"
        text += "# HELP \(name) TLS handshakes with Redis that failed, by reason.\n# TYPE \(name) counter\n"
        for row in rows {
            for reason in Self.tlsFailureReasons {
                let count = row.metrics.reduce(0) { $0 + ($1.tlsHandshakeFailures[reason] ?? 0) }
                text += "\(name){role=\"\(row.role)\",reason=\"\(reason)\"} \(count)\n"
            }
        }
    }
}
