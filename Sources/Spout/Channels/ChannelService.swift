import HTTPServer
import RESP

/// What the channel routes share: the broker (in-process, or over Redis when `channels.redisURL` is set) and the
/// access rules.
///
/// **Ownership:** created once by the service context; ``stop()`` at shutdown.
///
/// **Thread safety:** immutable references to thread-safe objects.
final class ChannelService: Sendable {
    /// The in-process broker (unused, never started, when channels go through Redis).
    let broker: ChannelBroker
    /// The Redis broker when `channels.redisURL` is set.
    let redis: RedisChannelBroker?
    let access: ChannelAccess

    /// - Parameter loops: The loops the Redis connections run on (the server's).
    init(
        configuration: SpoutConfiguration.Channels,
        metrics: ChannelMetrics,
        loops: [EventLoop] = [],
        registry: MetricsRegistry? = nil,
        maxBodyBytes: Int = 4 << 20,
        events: EventLog? = nil
    ) {
        broker = ChannelBroker(configuration: configuration, metrics: metrics)
        access = ChannelAccess(configuration: configuration)
        // The URL was checked when the configuration was loaded; one that does not parse here means no Redis.
        if !configuration.redisURL.isEmpty, !loops.isEmpty, let url = try? RedisURL(parsing: configuration.redisURL) {
            let redis = RedisChannelBroker(
                configuration: configuration,
                url: url,
                metrics: metrics,
                loops: loops,
                maxBodyBytes: maxBodyBytes,
                events: events
            )
            registry?.add(RedisMetrics(publishers: redis.publishers, followers: redis.followers))
            redis.start()
            self.redis = redis
        } else {
            redis = nil
            broker.start()
        }
    }

    /// Ends the sweeps and closes the Redis connections.
    func stop() {
        broker.stop()
        redis?.stop()
    }
}
