/// The request metrics of one `route` label, resolved once at start-up: recording a request then counts
/// through cells, with no label arrays built or hashed per request.
///
/// **Ownership:** created by the service for each route pattern (and for unmatched requests).
///
/// **Thread safety:** immutable; the cells it holds are safe to use from any thread.
final class RouteMetrics: Sendable {
    /// The `route` label.
    let route: String
    private let requests: CounterFamily
    private let duration: HistogramFamily.Series
    /// The `spout_http_requests_total{route,status}` cells of the statuses Spout answers with.
    private let statusCells: [(status: Int, cell: CounterFamily.Cell)]

    /// The statuses whose cells are resolved in advance; others are resolved when they happen.
    static let commonStatuses = [200, 204, 400, 404, 405, 406, 413, 500, 502, 503, 504]

    init(route: String, metrics: SpoutMetrics) {
        self.route = route
        requests = metrics.requests
        duration = metrics.requestDuration.series([route])
        statusCells = Self.commonStatuses.map { status in (status, metrics.requests.cell([route, String(status)])) }
    }

    /// Counts one answered request with `status` in `spout_http_requests_total`.
    func countRequest(status: Int) {
        for entry in statusCells where entry.status == status {
            entry.cell.increment()
            return
        }
        requests.increment([route, String(status)])
    }

    /// Counts one finished request and observes its duration.
    func record(status: Int, seconds: Double) {
        countRequest(status: status)
        duration.observe(seconds)
    }
}
