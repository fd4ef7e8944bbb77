import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Why an upstream call failed, in the four ways a caller can act on.
///
/// Every failure of the outbound client is one of these: transport errors from `URLSession`, a
/// status that is not 2xx, and a body that does not decode all end up here (see
/// ``UpstreamClient``), so routes map one type to one response (``problem``).
///
/// **Thread safety:** value type.
public enum UpstreamError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No response: connection refused or reset, DNS failure, TLS failure.
    case unreachable(url: String, reason: String)
    /// No complete response within the attempt's time limit or the request's deadline.
    case timeout(url: String, seconds: Double)
    /// A response whose status is not 2xx. `retryAfter` is the parsed `Retry-After`, if any.
    case status(url: String, code: Int, retryAfter: Duration?)
    /// A 2xx response whose body is not what was expected.
    case badBody(url: String, reason: String)
    /// The request was tried `attempts` times (more than once) and `error` ended the last one (or
    /// the overall deadline). `lastStatus` is the status of the last response received, if any.
    indirect case gaveUp(attempts: Int, lastStatus: Int?, error: UpstreamError)

    /// The URL the failing request was sent to.
    public var url: String {
        switch self {
        case .unreachable(let url, _), .timeout(let url, _), .status(let url, _, _), .badBody(let url, _): url
        case .gaveUp(_, _, let error): error.url
        }
    }

    /// The failure itself, without the ``gaveUp(attempts:lastStatus:error:)`` wrapper.
    public var underlying: UpstreamError {
        if case .gaveUp(_, _, let error) = self { return error.underlying }
        return self
    }

    /// How many times the request was sent: 1 unless this is ``gaveUp(attempts:lastStatus:error:)``.
    public var attempts: Int {
        if case .gaveUp(let attempts, _, _) = self { return attempts }
        return 1
    }

    /// The status of the last upstream response, if one came (`nil` for transport failures and
    /// timeouts with no response before them).
    public var upstreamStatus: Int? {
        switch self {
        case .status(_, let code, _): code
        case .gaveUp(_, let lastStatus, let error): error.upstreamStatus ?? lastStatus
        case .unreachable, .timeout, .badBody: nil
        }
    }

    /// Whether trying the same idempotent request again may succeed: connection failures,
    /// timeouts, `408`, `429`, `500`, `502`, `503` and `504`. Other statuses and bad bodies will not
    /// change on their own.
    ///
    /// `500` is not in the usual list (it may mean a deterministic bug upstream), but Spout only
    /// retries `GET`s, which are safe and idempotent (RFC 9110 §9.2), and a 500 from a JSON API
    /// behind a load balancer is often a transient fault (a restarting backend). Retrying it costs at
    /// most `upstream.attempts` requests within `upstream.deadlineSeconds`, so a permanent 500 is
    /// bounded in cost and still reported as a `502` naming the status.
    public var isRetryable: Bool {
        switch self {
        case .unreachable, .timeout: true
        case .status(_, let code, _): [408, 429, 500, 502, 503, 504].contains(code)
        case .badBody: false
        case .gaveUp(_, _, let error): error.isRetryable
        }
    }

    public var description: String {
        switch self {
        case .unreachable(let url, let reason): "upstream \(url) unreachable: \(reason)"
        case .timeout(let url, let seconds): "upstream \(url) did not answer within \(seconds) s"
        case .status(let url, let code, _): "upstream \(url) answered \(code)"
        case .badBody(let url, let reason): "upstream \(url) sent a body that could not be read: \(reason)"
        case .gaveUp(let attempts, let lastStatus, let error):
            if let lastStatus, error.upstreamStatus == nil {
                "\(error) after \(attempts) attempts (the last response was \(lastStatus))"
            } else {
                "\(error) after \(attempts) attempts"
            }
        }
    }

    /// The error for a transport failure reported by `URLSession`.
    init(_ error: URLError, url: String, timeoutSeconds: Double) {
        switch error.code {
        case .timedOut: self = .timeout(url: url, seconds: timeoutSeconds)
        default: self = .unreachable(url: url, reason: Self.reason(for: error))
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
    /// The response a route gives for this failure: `504` for timeouts, `502` otherwise, as an
    /// RFC 9457 problem naming the upstream URL and, when known, the upstream status
    /// (`upstreamStatus`) and how many attempts were made (`attempts`, when more than one).
    public var problem: Problem {
        var extensions: [(name: String, value: Problem.ExtensionValue)] = [("upstream", .string(url))]
        if let upstreamStatus { extensions.append(("upstreamStatus", .integer(upstreamStatus))) }
        if attempts > 1 { extensions.append(("attempts", .integer(attempts))) }
        if case .timeout = underlying {
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
}
