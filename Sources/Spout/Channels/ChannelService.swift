/// What the channel routes share: the broker and the access rules.
///
/// **Ownership:** created once by the service context.
///
/// **Thread safety:** immutable references to thread-safe objects.
final class ChannelService: Sendable {
    let broker: ChannelBroker
    let access: ChannelAccess

    init(configuration: SpoutConfiguration.Channels, metrics: ChannelMetrics) {
        broker = ChannelBroker(configuration: configuration, metrics: metrics)
        access = ChannelAccess(configuration: configuration)
        broker.start()
    }
}
