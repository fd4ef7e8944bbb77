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
/// - `spout_redis_reconnects_total`: times a connection became ready again.
///
/// **Thread safety:** safe from any thread (the connections' snapshots are locked).
final class RedisMetrics: MetricFamily, Sendable {
    private let roles: [(role: String, connections: [RedisConnection])]

    init(publishers: [RedisConnection], followers: [RedisConnection]) {
        roles = [("publish", publishers), ("subscribe", followers)]
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
    }
}
