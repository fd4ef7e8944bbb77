import EventLoops
import HTTPServer
import OpenSSL
import RESP

/// What the channel routes share: the broker (in-process, or over Redis when `channels.redisURL` is set) and the
/// access rules.
///
/// **Ownership:** created once by the service context; ``stop()`` at shutdown.
///
/// **Thread safety:** immutable references to thread-safe objects.
final class ChannelService: Sendable {
    /// Where the channels live.
    enum Backend {
        /// In this process (no `channels.redisURL`).
        case inProcess(ChannelBroker)
        /// In Redis, shared by every replica that names it.
        case redis(RedisChannelBroker)
    }

    let backend: Backend
    /// The channel metrics, whichever backend serves.
    let metrics: ChannelMetrics
    let access: ChannelAccess
    /// The publishes' `Idempotency-Key`s: remembered here in process, only the ones in flight over Redis.
    let idempotency: ChannelIdempotency

    /// The Redis broker, when channels go through Redis.
    var redis: RedisChannelBroker? {
        if case .redis(let redis) = backend { redis } else { nil }
    }

    /// - Parameter loops: The loops the Redis connections run on (the server's).
    /// - Parameter redisTLS: The client context of a `rediss://` URL, made at start-up.
    init(
        configuration: SpoutConfiguration.Channels,
        metrics: ChannelMetrics,
        loops: [EventLoop] = [],
        registry: MetricsRegistry? = nil,
        maxBodyBytes: Int = 4 << 20,
        events: EventLog? = nil,
        trustedProxies: [String] = [],
        redisTLS: TLSContext? = nil
    ) {
        self.metrics = metrics
        access = ChannelAccess(
            configuration: configuration,
            trustedProxies: trustedProxies,
            events: events,
            registry: registry
        )
        idempotency = ChannelIdempotency(configuration)
        // The URL was checked when the configuration was loaded; one that does not parse here means no Redis.
        if !configuration.redisURL.isEmpty, !loops.isEmpty, let url = try? RedisURL(parsing: configuration.redisURL) {
            let redis = RedisChannelBroker(
                configuration: configuration,
                url: url,
                metrics: metrics,
                loops: loops,
                maxBodyBytes: maxBodyBytes,
                events: events,
                tls: redisTLS
            )
            registry?.add(RedisMetrics(publishers: redis.publishers, followers: redis.followers))
            redis.start()
            backend = .redis(redis)
        } else {
            let broker = ChannelBroker(configuration: configuration, metrics: metrics)
            broker.start()
            backend = .inProcess(broker)
        }
    }

    /// Over Redis, this replica's goodbye to the shared presence (``RedisChannelBroker/depart(completion:)``), as
    /// a graceful shutdown ends, once its streams have ended; nothing in process.
    func depart() async {
        await redis?.depart()
    }

    /// Ends the sweep and closes the Redis connections.
    func stop() {
        access.stop()
        switch backend {
        case .inProcess(let broker): broker.stop()
        case .redis(let redis): redis.stop()
        }
    }
}
