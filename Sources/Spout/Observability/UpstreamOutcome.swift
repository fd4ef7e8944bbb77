/// How one upstream attempt ended, as counted in `spout_upstream_requests_total{outcome}`.
enum UpstreamOutcome: String, Sendable, CaseIterable {
    /// A 2xx response, read in full.
    case ok
    /// A response whose status is not 2xx.
    case status
    /// No complete response within the attempt's time limit.
    case timeout
    /// No response: connection refused or lost, DNS or TLS failure.
    case unreachable
    /// A response that could not be read as HTTP.
    case badBody = "bad_body"
    /// Cancelled by the caller (the client left, the deadline passed, or the request was abandoned).
    case cancelled
}
