/// The metrics Spout exposes at `GET /metrics`.
///
/// **Ownership:** created once by the service; every route holds it.
///
/// **Thread safety:** safe to call from any thread.
final class SpoutMetrics: Sendable {
    /// The registry rendered at `/metrics`.
    let registry: MetricsRegistry
    /// `spout_http_requests_total{route,status}`.
    let requests: CounterFamily
    /// `spout_http_request_duration_seconds{route}`: time to the end of the response.
    let requestDuration: HistogramFamily
    /// `spout_active_streams`: streaming responses currently open.
    let activeStreams: Gauge
    /// `spout_events_sent_total`: stream elements written (SSE events and NDJSON lines).
    let eventsSent: CounterFamily
    /// `spout_streams_ended_total{reason}`.
    let streamsEnded: CounterFamily
    /// `spout_upstream_requests_total{outcome}`: upstream HTTP requests (each attempt counts) by
    /// ``UpstreamOutcome``.
    let upstreamRequests: CounterFamily
    /// `spout_upstream_retries_total`: attempts after the first of an upstream request.
    let upstreamRetries: CounterFamily
    /// `spout_upstream_cache_total{result}`: cache lookups by ``CacheLookup`` (hit, miss, coalesced, stale).
    let upstreamCache: CounterFamily
    /// `spout_upstream_request_duration_seconds`: time of one upstream attempt, whatever its outcome.
    let upstreamDuration: HistogramFamily
    /// `spout_upstream_in_flight`: upstream attempts started and not yet ended or cancelled.
    let upstreamInFlight: Gauge
    /// `spout_upstream_cache_bytes`: bytes of response bodies in the upstream cache (read from the cache).
    let upstreamCacheBytes: SampledGauge
    /// `spout_upstream_transfers_open`: upstream transfers whose connections are open or opening (read
    /// from the client's driver); an attempt that ended counts until its connection is closed.
    let upstreamTransfersOpen: SampledGauge
    /// The `spout_channel…` metrics.
    let channels: ChannelMetrics

    /// Creates the metrics in a new registry.
    init() {
        let registry = MetricsRegistry()
        self.registry = registry
        requests = registry.counter(
            "spout_http_requests_total",
            help: "HTTP requests answered.",
            labels: ["route", "status"]
        )
        requestDuration = registry.histogram(
            "spout_http_request_duration_seconds",
            help: "Time from request to the end of its response, in seconds.",
            buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
            labels: ["route"]
        )
        activeStreams = registry.gauge("spout_active_streams", help: "Streaming responses currently open.")
        eventsSent = registry.counter("spout_events_sent_total", help: "Stream elements written to clients.")
        streamsEnded = registry.counter(
            "spout_streams_ended_total",
            help: "Streams ended, by reason.",
            labels: ["reason"]
        )
        upstreamRequests = registry.counter(
            "spout_upstream_requests_total",
            help: "Upstream HTTP requests (each attempt), by outcome.",
            labels: ["outcome"]
        )
        upstreamRetries = registry.counter("spout_upstream_retries_total", help: "Upstream attempts after the first.")
        upstreamCache = registry.counter(
            "spout_upstream_cache_total",
            help: "Upstream cache lookups, by result.",
            labels: ["result"]
        )
        upstreamDuration = registry.histogram(
            "spout_upstream_request_duration_seconds",
            help: "Time of one upstream attempt, in seconds.",
            buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]
        )
        upstreamInFlight = registry.gauge("spout_upstream_in_flight", help: "Upstream attempts under way.")
        upstreamCacheBytes = registry.sampledGauge(
            "spout_upstream_cache_bytes",
            help: "Bytes of response bodies held by the upstream cache."
        )
        upstreamTransfersOpen = registry.sampledGauge(
            "spout_upstream_transfers_open",
            help: "Upstream transfers whose connections are open or opening."
        )
        channels = ChannelMetrics(registry: registry)
        streamsEnded.preinitialize(StreamEnd.allCases.map { [$0.rawValue] })
        upstreamRequests.preinitialize(UpstreamOutcome.allCases.map { [$0.rawValue] })
        upstreamCache.preinitialize(CacheLookup.allCases.map { [$0.rawValue] })
        registry.add(BuildInfoMetric())
        registry.add(ProcessMetrics())
    }
}
