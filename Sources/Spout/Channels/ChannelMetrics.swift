/// The channel metrics at `GET /metrics`.
///
/// **Ownership:** created with ``SpoutMetrics``; the broker and every subscription hold it.
///
/// **Thread safety:** safe from any thread (atomics).
final class ChannelMetrics: Sendable {
    /// `spout_channels`: channels that exist.
    let channels: Gauge
    /// `spout_channel_subscribers`: subscribers joined to a channel.
    let subscribers: Gauge
    /// `spout_channel_events_published_total`.
    let published: CounterFamily.Cell
    /// `spout_channel_events_delivered_total`: live and replayed events handed to subscribers' streams.
    let delivered: CounterFamily.Cell
    /// `spout_channel_events_replayed_total`: events sent from the history to resuming subscribers.
    let replayed: CounterFamily.Cell
    /// `spout_channel_overflow_disconnects_total`: streams ended because their reader fell past its bound.
    let overflowDisconnects: CounterFamily.Cell
    /// `spout_channel_events_dropped_total`: events dropped for slow subscribers under `drop-oldest`.
    let dropped: CounterFamily.Cell
    /// `spout_channel_publishes_rate_limited_total`: publishes refused with `429` (``PublishRateLimiter``).
    let publishesRateLimited: CounterFamily.Cell
    /// `spout_channel_subscriptions_refused_total`: streams refused with `429` for going past
    /// `channels.maxSubscriptionsPerSubject` (``SubscriptionQuota``).
    let subscriptionsRefused: CounterFamily.Cell
    /// `spout_channel_subject_publishes_total{subject}`: publishes answered `202`, by ``subjects``' label.
    let subjectPublishes: CounterFamily
    /// `spout_channel_subject_subscriptions_total{subject}`: subscription streams opened, by ``subjects``' label.
    let subjectSubscriptions: CounterFamily
    /// The bounded `subject` label of the two families above.
    let subjects: SubjectLabels

    init(registry: MetricsRegistry) {
        channels = registry.gauge("spout_channels", help: "Channels that exist.")
        subscribers = registry.gauge("spout_channel_subscribers", help: "Subscribers joined to a channel.")
        func counter(_ name: String, _ help: String) -> CounterFamily.Cell {
            let family = registry.counter(name, help: help)
            family.preinitialize([[]])
            return family.cell([])
        }
        published = counter("spout_channel_events_published_total", "Events published to channels.")
        delivered = counter("spout_channel_events_delivered_total", "Channel events handed to subscribers' streams.")
        replayed = counter("spout_channel_events_replayed_total", "Channel events replayed from history on resume.")
        overflowDisconnects = counter(
            "spout_channel_overflow_disconnects_total",
            "Subscriber streams ended because the reader fell past its buffer."
        )
        dropped = counter(
            "spout_channel_events_dropped_total",
            "Events dropped for subscribers past their buffer (drop-oldest)."
        )
        publishesRateLimited = counter(
            "spout_channel_publishes_rate_limited_total",
            "Publishes refused with 429 for going past channels.publishRatePerMinute or publishBurst."
        )
        subscriptionsRefused = counter(
            "spout_channel_subscriptions_refused_total",
            "Subscription streams refused with 429 for going past channels.maxSubscriptionsPerSubject."
        )
        subjects = SubjectLabels()
        subjectPublishes = registry.counter(
            "spout_channel_subject_publishes_total",
            help: "Publishes answered 202, by subject (a JWT's sub for the first 64 seen, then other; anonymous, "
                + "static).",
            labels: ["subject"]
        )
        subjectSubscriptions = registry.counter(
            "spout_channel_subject_subscriptions_total",
            help: "Subscription streams opened, by subject (a JWT's sub for the first 64 seen, then other; "
                + "anonymous, static).",
            labels: ["subject"]
        )
    }
}
