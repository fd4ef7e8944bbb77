/// Why a stream ended, as counted in metrics and written in the request log.
public enum StreamEnd: String, Sendable, CaseIterable {
    /// The sequence finished and the final frame was written.
    case completed
    /// The client went away (closed the connection or stopped for longer than the stall timeout).
    case clientGone = "client_gone"
    /// The producer failed (an upstream error after retries).
    case error
    /// The server is shutting down; the client got a final `event: end` with this reason.
    case shutdown
}

/// The metrics Spout exposes at `GET /metrics`.
///
/// **Ownership:** created once by the service; every route holds it.
///
/// **Thread safety:** safe to call from any thread.
public final class SpoutMetrics: Sendable {
    /// The registry rendered at `/metrics`.
    public let registry: MetricsRegistry
    /// `spout_http_requests_total{route,status}`.
    public let requests: CounterFamily
    /// `spout_http_request_duration_seconds{route}`: time to the end of the response.
    public let requestDuration: HistogramFamily
    /// `spout_active_streams`: streaming responses currently open.
    public let activeStreams: Gauge
    /// `spout_events_sent_total`: stream elements written (SSE events and NDJSON lines).
    public let eventsSent: CounterFamily
    /// `spout_streams_ended_total{reason}`.
    public let streamsEnded: CounterFamily

    /// Creates the metrics in a new registry.
    public init() {
        let registry = MetricsRegistry()
        self.registry = registry
        requests = registry.counter("spout_http_requests_total", help: "HTTP requests answered.", labels: ["route", "status"])
        requestDuration = registry.histogram(
            "spout_http_request_duration_seconds",
            help: "Time from request to the end of its response, in seconds.",
            buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
            labels: ["route"]
        )
        activeStreams = registry.gauge("spout_active_streams", help: "Streaming responses currently open.")
        eventsSent = registry.counter("spout_events_sent_total", help: "Stream elements written to clients.")
        streamsEnded = registry.counter("spout_streams_ended_total", help: "Streams ended, by reason.", labels: ["reason"])
    }
}
