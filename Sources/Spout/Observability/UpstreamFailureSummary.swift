/// Why an upstream call failed, as the request log records it under `upstream`:
/// `{"url":"http://api.internal/posts/9","error":"status","status":503,"attempts":3}` or
/// `{"url":"…","error":"timeout","attempts":1,"timeout_s":10}`.
///
/// The URL belongs in the log, not in the problem a client sees (it names internal hosts).
///
/// A class, not a struct: every answer passes an optional summary along (nearly always nil) from the route to
/// the log line, and an optional of a struct with strings was copied and destroyed through the runtime's generic
/// witnesses each time (about 200 instructions a request); an optional reference costs a null check.
///
/// **Thread safety:** immutable.
final class UpstreamFailureSummary: Sendable, Equatable {
    /// The URL of the failing call.
    let url: String?
    /// `unreachable`, `timeout`, `status`, `bad_body` or `too_large` (`failed` when only a problem told the cause).
    let error: String
    /// The status of the last upstream response, if one came.
    let status: Int?
    /// How many attempts were made.
    let attempts: Int?
    /// The time limit that ran out, for a timeout.
    let timeoutSeconds: Double?

    init(url: String?, error: String, status: Int? = nil, attempts: Int? = nil, timeoutSeconds: Double? = nil) {
        self.url = url
        self.error = error
        self.status = status
        self.attempts = attempts
        self.timeoutSeconds = timeoutSeconds
    }

    /// The cause of `failure`, as the upstream client reports it: the absolute URL (which problems never show),
    /// the kind, the last status, the attempts and the time limit that ran out.
    convenience init(_ failure: UpstreamError) {
        var timeout: Double?
        let kind: String
        switch failure.underlying {
        case .unreachable: kind = "unreachable"
        case .timeout(_, let seconds):
            kind = "timeout"
            timeout = seconds
        case .status: kind = "status"
        case .badBody, .gaveUp: kind = "bad_body"  // `underlying` is never `gaveUp`; kept total
        case .tooLarge: kind = "too_large"
        }
        self.init(
            url: failure.url,
            error: kind,
            status: failure.upstreamStatus,
            attempts: failure.attempts,
            timeoutSeconds: timeout
        )
    }

    /// The cause as far as an upstream problem tells it (its `upstream`, `upstreamStatus` and `attempts` members),
    /// for routes that answer with the problem alone; `nil` for problems that are not about the upstream.
    convenience init?(problem: Problem) {
        let isTimeout = problem.type == Problem.Kind.upstreamTimeout
        guard isTimeout || problem.type == Problem.Kind.upstreamFailed else { return nil }
        var url: String?
        var status: Int?
        var attempts: Int?
        for (name, value) in problem.extensions {
            switch (name, value) {
            case ("upstream", .string(let text)): url = text
            case ("upstreamStatus", .integer(let code)): status = code
            case ("attempts", .integer(let count)): attempts = count
            default: break
            }
        }
        // A problem does not say whether a failure without a status was a refused connection or a bad body.
        let kind = isTimeout ? "timeout" : (status != nil ? "status" : "failed")
        self.init(url: url, error: kind, status: status, attempts: attempts)
    }

    static func == (lhs: UpstreamFailureSummary, rhs: UpstreamFailureSummary) -> Bool {
        lhs.url == rhs.url && lhs.error == rhs.error && lhs.status == rhs.status && lhs.attempts == rhs.attempts
            && lhs.timeoutSeconds == rhs.timeoutSeconds
    }

    /// Appends the summary as a JSON object.
    func appendJSON(to bytes: inout [UInt8]) {
        var object = JSONObjectWriter()
        if let url { object.add("url", url) }
        object.add("error", error)
        if let status { object.add("status", status) }
        if let attempts { object.add("attempts", attempts) }
        if let timeoutSeconds { object.add("timeout_s", timeoutSeconds) }
        bytes += object.finish()
    }
}
