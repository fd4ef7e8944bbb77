/// Why a request's upstream call failed, as the request log records it: the fields an operator
/// needs and a client must not see (the absolute URL is configuration).
///
/// Routes answer an upstream failure with ``UpstreamError/problem`` (client-safe) and hand
/// ``UpstreamError/cause`` to the request's log fields (see `UpstreamReply.noteFailure(_:in:)`); the
/// log writes ``jsonBytes`` as the value of one member, e.g.
/// `"upstream":{"url":"http://10.0.0.5/api/posts/1","error":"status","status":503,"attempts":3}`.
///
/// **Thread safety:** value type.
public struct UpstreamFailureCause: Equatable, Sendable, CustomStringConvertible {
    /// The kind of failure, as a stable word for log queries.
    public enum Kind: String, Sendable, CaseIterable {
        /// Connection refused or lost, DNS or TLS failure.
        case unreachable
        /// The attempt's time limit or the call's deadline passed.
        case timeout
        /// A response whose status is not 2xx.
        case status
        /// A 2xx body that could not be read.
        case badBody = "bad_body"
        /// A body over `upstream.maxBodyBytes`.
        case tooLarge = "too_large"
    }

    /// The absolute URL of the request.
    public var url: String
    /// What went wrong.
    public var kind: Kind
    /// The status of the last upstream response, if one came.
    public var upstreamStatus: Int?
    /// How many times the request was sent.
    public var attempts: Int
    /// The time limit that passed, in seconds, when ``kind`` is ``Kind/timeout``.
    public var timeoutSeconds: Double?
    /// The whole failure in words, with the absolute URL (``UpstreamError/logDescription``).
    public var message: String

    /// The cause of `error`.
    public init(_ error: UpstreamError) {
        url = error.url
        upstreamStatus = error.upstreamStatus
        attempts = error.attempts
        message = error.logDescription
        timeoutSeconds = nil
        switch error.underlying {
        case .unreachable: kind = .unreachable
        case .timeout(_, let seconds):
            kind = .timeout
            timeoutSeconds = seconds
        case .status: kind = .status
        case .badBody, .gaveUp: kind = .badBody
        case .tooLarge: kind = .tooLarge
        }
    }

    public var description: String { message }

    /// The cause as one JSON object: `url`, `error` (the kind), then `status`, `attempts` and
    /// `timeoutSeconds` when they apply (`attempts` only when more than one).
    public var jsonBytes: [UInt8] {
        var object = JSONObjectWriter()
        object.add("url", url)
        object.add("error", kind.rawValue)
        if let upstreamStatus { object.add("status", upstreamStatus) }
        if attempts > 1 { object.add("attempts", attempts) }
        if let timeoutSeconds { object.add("timeoutSeconds", timeoutSeconds, fractionDigits: 3) }
        return object.finish()
    }
}
