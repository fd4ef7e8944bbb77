import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Why an upstream call failed, in the ways a caller can act on.
///
/// Every failure of the outbound client is one of these: transport errors from `URLSession`, a
/// status that is not 2xx, a body over the limit, and a body that does not decode all end up here (see
/// ``UpstreamClient``), so routes map one type to one response (``problem``).
///
/// Each case carries its ``UpstreamTarget``: the absolute URL for the log (``logDescription``,
/// ``cause``) and the resource under the API root, the only part a client is shown (``description``,
/// ``problem``): the upstream's address is configuration.
///
/// **Thread safety:** value type.
enum UpstreamError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No response: connection refused or reset, DNS failure, TLS failure.
    case unreachable(UpstreamTarget, reason: String)
    /// No complete response within the attempt's time limit or the request's deadline.
    case timeout(UpstreamTarget, seconds: Double)
    /// A response whose status is not 2xx. `retryAfter` is the parsed `Retry-After`, if any.
    case status(UpstreamTarget, code: Int, retryAfter: Duration?)
    /// A 2xx response whose body is not what was expected.
    case badBody(UpstreamTarget, reason: String)
    /// A body longer than `limit` bytes (`upstream.maxBodyBytes`): `declared` when its `Content-Length`
    /// said so, `nil` when it was cut off while arriving.
    case tooLarge(UpstreamTarget, limit: Int, declared: Int?)
    /// The request was tried `attempts` times (more than once) and `error` ended the last one (or
    /// the overall deadline). `lastStatus` is the status of the last response received, if any.
    indirect case gaveUp(attempts: Int, lastStatus: Int?, error: UpstreamError)

    /// Where the failing request went.
    var target: UpstreamTarget {
        switch self {
        case .unreachable(let target, _), .timeout(let target, _), .status(let target, _, _),
            .badBody(let target, _), .tooLarge(let target, _, _):
            target
        case .gaveUp(_, _, let error): error.target
        }
    }

    /// The absolute URL the failing request was sent to: for logs, never for clients.
    var url: String { target.url }

    /// The resource under the API root the failing request asked for (e.g. `/posts/1`).
    var resource: String { target.resource }

    /// The failure itself, without the ``gaveUp(attempts:lastStatus:error:)`` wrapper.
    var underlying: UpstreamError {
        if case .gaveUp(_, _, let error) = self { return error.underlying }
        return self
    }

    /// How many times the request was sent: 1 unless this is ``gaveUp(attempts:lastStatus:error:)``.
    var attempts: Int {
        if case .gaveUp(let attempts, _, _) = self { return attempts }
        return 1
    }

    /// Whether the request ran out of time (the attempt's limit or the whole call's deadline).
    var isTimeout: Bool {
        if case .timeout = underlying { return true }
        return false
    }

    /// The status of the last upstream response, if one came (`nil` for transport failures and
    /// timeouts with no response before them).
    var upstreamStatus: Int? {
        switch self {
        case .status(_, let code, _): code
        case .gaveUp(_, let lastStatus, let error): error.upstreamStatus ?? lastStatus
        case .unreachable, .timeout, .badBody, .tooLarge: nil
        }
    }

    /// The wait the upstream asked for with the `Retry-After` of a `429` or `503` that ended the call: Spout
    /// answers `503` with it instead of calling the upstream again before that time.
    var upstreamRetryAfter: Duration? {
        switch self {
        case .status(_, let code, let retryAfter?) where code == 429 || code == 503: retryAfter
        case .gaveUp(_, _, let error): error.upstreamRetryAfter
        case .status, .unreachable, .timeout, .badBody, .tooLarge: nil
        }
    }

    /// ``upstreamRetryAfter`` as the whole seconds of a `Retry-After` field (rounded up, at least 1).
    var retryAfterSeconds: Int? {
        guard let wait = upstreamRetryAfter else { return nil }
        let (seconds, attoseconds) = wait.components
        return Int(max(1, min(86_400, seconds + (attoseconds > 0 ? 1 : 0))))
    }

    /// Whether trying the same idempotent request again may succeed: connection failures,
    /// timeouts, `408`, `429`, `500`, `502`, `503` and `504`. Other statuses, bad bodies and bodies over
    /// the limit will not change on their own.
    ///
    /// `500` is not in the usual list (it may mean a deterministic bug upstream), but Spout only
    /// retries `GET`s, which are safe and idempotent (RFC 9110 §9.2), and a 500 from a JSON API
    /// behind a load balancer is often a transient fault (a restarting backend). Retrying it costs at
    /// most `upstream.attempts` requests within `upstream.deadlineSeconds`, so a permanent 500 is
    /// bounded in cost and still reported as a `502` naming the status.
    var isRetryable: Bool {
        switch self {
        case .unreachable, .timeout: true
        case .status(_, let code, _): [408, 429, 500, 502, 503, 504].contains(code)
        case .badBody, .tooLarge: false
        case .gaveUp(_, _, let error): error.isRetryable
        }
    }

    /// What went wrong, naming the resource only (`upstream /posts/1 answered 503 after 3 attempts`):
    /// safe to show a client.
    var description: String { describe(\.resource) }

    /// What went wrong, naming the absolute URL (`upstream http://10.0.0.5/api/posts/1 answered 503
    /// after 3 attempts`): for the log.
    var logDescription: String { describe(\.url) }

    private func describe(_ name: KeyPath<UpstreamTarget, String>) -> String {
        switch self {
        case .unreachable(let target, let reason): "upstream \(target[keyPath: name]) unreachable: \(reason)"
        case .timeout(let target, let seconds):
            "upstream \(target[keyPath: name]) did not answer within \(seconds) s"
        case .status(let target, let code, _): "upstream \(target[keyPath: name]) answered \(code)"
        case .badBody(let target, let reason):
            "upstream \(target[keyPath: name]) sent a body that could not be read: \(reason)"
        case .tooLarge(let target, let limit, let declared?):
            "upstream \(target[keyPath: name]) declared a body of \(declared) bytes, more than the limit of "
                + "\(limit) bytes (upstream.maxBodyBytes)"
        case .tooLarge(let target, let limit, nil):
            "upstream \(target[keyPath: name]) sent a body of more than the limit of \(limit) bytes "
                + "(upstream.maxBodyBytes)"
        case .gaveUp(let attempts, let lastStatus, let error):
            if let lastStatus, error.upstreamStatus == nil {
                "\(error.describe(name)) after \(attempts) attempts (the last response was \(lastStatus))"
            } else {
                "\(error.describe(name)) after \(attempts) attempts"
            }
        }
    }

    /// The error for a failed transfer.
    init(_ error: BodyTransferError, target: UpstreamTarget, timeoutSeconds: Double) {
        switch error {
        case .transport(let error): self.init(error, target: target, timeoutSeconds: timeoutSeconds)
        case .tooLarge(let limit, let declared): self = .tooLarge(target, limit: limit, declared: declared)
        case .notHTTP: self = .badBody(target, reason: "not an HTTP response")
        }
    }

    /// The error for a transport failure reported by `URLSession`.
    init(_ error: URLError, target: UpstreamTarget, timeoutSeconds: Double) {
        switch error.code {
        case .timedOut: self = .timeout(target, seconds: timeoutSeconds)
        default: self = .unreachable(target, reason: Self.reason(for: error))
        }
    }

    private static func reason(for error: URLError) -> String {
        switch error.code {
        case .cannotConnectToHost: "connection refused"
        case .networkConnectionLost: "connection lost before the response was complete"
        case .cannotFindHost, .dnsLookupFailed: "host not found"
        case .notConnectedToInternet: "no network"
        case .secureConnectionFailed, .serverCertificateUntrusted: "TLS handshake failed"
        case .badServerResponse: "malformed HTTP response"
        case .cancelled: "cancelled"
        default: "URLError \(error.code.rawValue)"
        }
    }
}

extension UpstreamError {
    /// The `Retry-After` of a response as a delay: delta-seconds or an HTTP date (RFC 9110 §10.2.3).
    /// Unparseable or negative values are ignored.
    static func retryAfter(_ value: String?, now: Date = Date()) -> Duration? {
        guard let value = value?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        if let seconds = Int(value) {
            return seconds >= 0 ? .seconds(min(seconds, 86_400)) : nil
        }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        guard let date = formatter.date(from: value) else { return nil }
        let seconds = max(0, min(date.timeIntervalSince(now), 86_400))
        return .milliseconds(Int64((seconds * 1000).rounded()))
    }
}

extension UpstreamError {
    /// The response a route gives for this failure: `503` (with the upstream's wait as `retryAfter`, which
    /// the response also carries as `Retry-After`) when a `429` or `503` with a `Retry-After` ended it, `504`
    /// for timeouts, `502` otherwise, as an
    /// RFC 9457 problem naming the upstream resource (`upstream`, e.g. `/posts/1`, never the host) and,
    /// when known, the upstream status (`upstreamStatus`), how many attempts were made (`attempts`, when
    /// more than one) and, for a body over the limit, the limit (`limit`).
    var problem: Problem {
        var extensions: [(name: String, value: Problem.ExtensionValue)] = [("upstream", .string(resource))]
        if let upstreamStatus { extensions.append(("upstreamStatus", .integer(upstreamStatus))) }
        if attempts > 1 { extensions.append(("attempts", .integer(attempts))) }
        if case .tooLarge(_, let limit, _) = underlying { extensions.append(("limit", .integer(limit))) }
        if let retryAfterSeconds {
            extensions.append(("retryAfter", .integer(retryAfterSeconds)))
            return Problem(
                status: 503,
                type: Problem.Kind.upstreamUnavailable,
                title: "Upstream unavailable",
                detail: description + " and asked to be called again in \(retryAfterSeconds) s",
                extensions: extensions
            )
        }
        if isTimeout {
            return Problem(
                status: 504,
                type: Problem.Kind.upstreamTimeout,
                title: "Upstream timeout",
                detail: description,
                extensions: extensions
            )
        }
        return Problem(
            status: 502,
            type: Problem.Kind.upstreamFailed,
            title: "Upstream failed",
            detail: description,
            extensions: extensions
        )
    }

    /// The cause of this failure as the request log records it (absolute URL included).
    var cause: UpstreamFailureSummary { UpstreamFailureSummary(self) }
}
