/// An RFC 9457 problem: what went wrong with a request, rendered as `application/problem+json`.
///
/// Every error a JSON client can see is one of these, with the HTTP status, a stable `type`
/// URI per kind of problem, a short `title`, and a `detail` that names the offending input:
/// `count must be a non-negative integer, got "abc"`. Extra members (`parameter`, `upstream`,
/// `upstreamStatus`) help programs react without parsing the prose; numbers are JSON numbers.
///
/// **Thread safety:** value type; not shared.
struct Problem: Error, Equatable, Sendable, CustomStringConvertible {
    /// The media type of a rendered problem.
    static let mediaType = "application/problem+json"

    /// The HTTP status code.
    var status: Int
    /// A URI reference naming the kind of problem.
    var type: String
    /// A short summary of the kind of problem, the same for every occurrence.
    var title: String
    /// What was wrong with this request, in words that name the input.
    var detail: String
    /// The request path the problem occurred on.
    var instance: String?
    /// Additional members (e.g. `parameter` → `"count"`, `upstreamStatus` → `503`).
    var extensions: [(name: String, value: ExtensionValue)]

    /// The value of an extension member: a JSON string or a JSON integer. String and integer literals
    /// convert, so `("upstreamStatus", 503)` and `("parameter", "count")` both read naturally.
    enum ExtensionValue: Equatable, Sendable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
        CustomStringConvertible
    {
        case string(String)
        case integer(Int)

        init(stringLiteral value: String) { self = .string(value) }
        init(integerLiteral value: Int) { self = .integer(value) }

        var description: String {
            switch self {
            case .string(let value): value
            case .integer(let value): String(value)
            }
        }
    }

    /// Creates a problem.
    init(
        status: Int,
        type: String,
        title: String,
        detail: String,
        instance: String? = nil,
        extensions: [(name: String, value: ExtensionValue)] = []
    ) {
        self.status = status
        self.type = type
        self.title = title
        self.detail = detail
        self.instance = instance
        self.extensions = extensions
    }

    /// Creates a problem of kind `type`: its URI and its title.
    init(
        _ type: ProblemType,
        status: Int,
        detail: String,
        extensions: [(name: String, value: ExtensionValue)] = []
    ) {
        self.init(status: status, type: type.uri, title: type.title, detail: detail, extensions: extensions)
    }

    var description: String { "\(status) \(title): \(detail)" }

    static func == (lhs: Problem, rhs: Problem) -> Bool {
        lhs.status == rhs.status && lhs.type == rhs.type && lhs.title == rhs.title && lhs.detail == rhs.detail
            && lhs.instance == rhs.instance && lhs.extensions.elementsEqual(rhs.extensions) { $0 == $1 }
    }

    /// The problem as `application/problem+json` bytes.
    var jsonBytes: [UInt8] {
        var object = JSONObjectWriter()
        object.add("type", type)
        object.add("title", title)
        object.add("status", status)
        object.add("detail", detail)
        if let instance { object.add("instance", instance) }
        for (name, value) in extensions {
            switch value {
            case .string(let string): object.add(name, string)
            case .integer(let integer): object.add(name, integer)
            }
        }
        return object.finish()
    }
}

extension Problem {
    /// The `type` URIs Spout uses, from the catalogue ``ProblemType/all``: relative references resolved
    /// against the service, each answering `GET` with its explanation.
    enum Kind {
        static let invalidParameter = ProblemType.invalidParameter.uri
        static let notFound = ProblemType.notFound.uri
        static let methodNotAllowed = ProblemType.methodNotAllowed.uri
        static let notAcceptable = ProblemType.notAcceptable.uri
        static let upstreamFailed = ProblemType.upstreamFailed.uri
        static let upstreamTimeout = ProblemType.upstreamTimeout.uri
        static let upstreamUnavailable = ProblemType.upstreamUnavailable.uri
        static let unavailable = ProblemType.unavailable.uri
        static let invalidBody = ProblemType.invalidBody.uri
        static let contentTooLarge = ProblemType.contentTooLarge.uri
        static let requestHeadTooLarge = ProblemType.requestHeadTooLarge.uri
        static let unsupportedMediaType = ProblemType.unsupportedMediaType.uri
        static let unauthorized = ProblemType.unauthorized.uri
        static let forbidden = ProblemType.forbidden.uri
        static let outcomeUnknown = ProblemType.outcomeUnknown.uri
        static let idempotencyKeyInFlight = ProblemType.idempotencyKeyInFlight.uri
        static let idempotencyKeyReused = ProblemType.idempotencyKeyReused.uri
        static let tokenInvalid = ProblemType.tokenInvalid.uri
        static let tokenExpired = ProblemType.tokenExpired.uri
        static let tokenSignatureInvalid = ProblemType.tokenSignatureInvalid.uri
        static let tokenKeyUnknown = ProblemType.tokenKeyUnknown.uri
        static let channelNotGranted = ProblemType.channelNotGranted.uri
        static let rateLimited = ProblemType.rateLimited.uri
        static let tooManySubscriptions = ProblemType.tooManySubscriptions.uri
    }

    /// `400`: a query parameter is malformed or out of range.
    static func invalidParameter(_ name: String, _ detail: String) -> Problem {
        Problem(
            .invalidParameter,
            status: 400,
            detail: detail,
            extensions: [("parameter", .string(name))]
        )
    }

    /// `404`: nothing is served at this path.
    static func notFound(_ detail: String) -> Problem {
        Problem(.notFound, status: 404, detail: detail)
    }

    /// `405`: the path exists but not for this method.
    static func methodNotAllowed(_ method: String, allowed: [String]) -> Problem {
        Problem(
            .methodNotAllowed,
            status: 405,
            detail: "\(method) is not allowed here; use \(allowed.joined(separator: ", "))",
            extensions: [("allow", .string(allowed.joined(separator: ", ")))]
        )
    }

    /// `406`: none of the representations the client accepts can be produced.
    static func notAcceptable(_ accept: String, available: [String]) -> Problem {
        Problem(
            .notAcceptable,
            status: 406,
            detail: "cannot produce any of \"\(accept)\"; available: \(available.joined(separator: ", "))"
        )
    }

    /// `503`: the service is shutting down or over capacity.
    static func unavailable(_ detail: String) -> Problem {
        Problem(.unavailable, status: 503, detail: detail)
    }

    /// `400`: the request body is malformed or not the shape the route takes.
    static func invalidBody(_ detail: String) -> Problem {
        Problem(.invalidBody, status: 400, detail: detail)
    }

    /// `413`: part of the body is larger than its limit.
    static func contentTooLarge(_ detail: String) -> Problem {
        Problem(.contentTooLarge, status: 413, detail: detail)
    }

    /// `415`: the body's media type is not one the route reads.
    static func unsupportedMediaType(_ detail: String) -> Problem {
        Problem(
            .unsupportedMediaType,
            status: 415,
            detail: detail
        )
    }

    /// `401`: a bearer token is needed.
    static func unauthorized(_ detail: String) -> Problem {
        Problem(.unauthorized, status: 401, detail: detail)
    }

    /// `403`: the token or the client may not do this.
    static func forbidden(_ detail: String) -> Problem {
        Problem(.forbidden, status: 403, detail: detail)
    }

    /// `503`: a publish that may or may not have been stored.
    static func outcomeUnknown(_ detail: String) -> Problem {
        Problem(.outcomeUnknown, status: 503, detail: detail)
    }

    /// `409`: the same `Idempotency-Key` is still being answered.
    static func idempotencyKeyInFlight(_ detail: String) -> Problem {
        Problem(
            .idempotencyKeyInFlight,
            status: 409,
            detail: detail
        )
    }

    /// `422`: an `Idempotency-Key` used again with another body.
    static func idempotencyKeyReused(_ detail: String) -> Problem {
        Problem(
            .idempotencyKeyReused,
            status: 422,
            detail: detail
        )
    }

    /// The problem for an error the HTTP server answers itself, before routing (see
    /// `Server.Configuration.errorResponseBody`), when the catalogue has its kind: `413` (a body over
    /// `limits.maxBodyBytes`, or over what the route takes), `414` and `431` (a request line or header fields over
    /// the parser's limits) and `503` (a request other than a probe on a connection of the probe reserve,
    /// `probeConnections`). Others (a malformed request: `400`, `501`, `505`) keep the server's plain-text reason.
    static func serverError(status: Int, reason: String) -> Problem? {
        switch status {
        case 413: .contentTooLarge(reason)
        case 414, 431: Problem(.requestHeadTooLarge, status: status, detail: reason)
        case 503: .unavailable(reason)
        default: nil
        }
    }
}
