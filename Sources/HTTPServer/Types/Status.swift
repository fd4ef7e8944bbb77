/// An HTTP response status: a three-digit code and its reason phrase (RFC 9110 §15).
///
/// Two statuses are equal when their codes are equal; the reason phrase is informational only
/// (RFC 9112 §4 lets a client ignore it), so `Status(code: 200, reasonPhrase: "Fine") == .ok`.
///
/// **Ownership:** A value; owned by whoever holds it.
/// **Thread safety:** Value type; not shared.
public struct Status: Hashable, Sendable, CustomStringConvertible {
    /// The three-digit status code, e.g. `404`.
    public var code: Int
    /// The reason phrase sent after the code, e.g. `Not Found`.
    public var reasonPhrase: String

    /// Creates a status with an explicit reason phrase.
    public init(code: Int, reasonPhrase: String) {
        self.code = code
        self.reasonPhrase = reasonPhrase
    }

    /// Creates a status with the standard reason phrase for `code`, or an empty phrase for an unregistered code.
    public init(code: Int) {
        self.init(code: code, reasonPhrase: Status.standardReasonPhrase(for: code) ?? "")
    }

    /// `200 OK` style text: the code and the reason phrase.
    public var description: String { reasonPhrase.isEmpty ? "\(code)" : "\(code) \(reasonPhrase)" }

    /// Whether a response with this status may carry content: false for 1xx, 204 and 304 (RFC 9110 §6.4.1).
    public var allowsBody: Bool { !(100...199).contains(code) && code != 204 && code != 304 }

    public static func == (lhs: Status, rhs: Status) -> Bool { lhs.code == rhs.code }

    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    /// `100 Continue`.
    public static let `continue` = Status(code: 100, reasonPhrase: "Continue")
    /// `101 Switching Protocols`.
    public static let switchingProtocols = Status(code: 101, reasonPhrase: "Switching Protocols")
    /// `200 OK`.
    public static let ok = Status(code: 200, reasonPhrase: "OK")
    /// `201 Created`.
    public static let created = Status(code: 201, reasonPhrase: "Created")
    /// `202 Accepted`.
    public static let accepted = Status(code: 202, reasonPhrase: "Accepted")
    /// `204 No Content`.
    public static let noContent = Status(code: 204, reasonPhrase: "No Content")
    /// `206 Partial Content`.
    public static let partialContent = Status(code: 206, reasonPhrase: "Partial Content")
    /// `301 Moved Permanently`.
    public static let movedPermanently = Status(code: 301, reasonPhrase: "Moved Permanently")
    /// `302 Found`.
    public static let found = Status(code: 302, reasonPhrase: "Found")
    /// `303 See Other`.
    public static let seeOther = Status(code: 303, reasonPhrase: "See Other")
    /// `304 Not Modified`.
    public static let notModified = Status(code: 304, reasonPhrase: "Not Modified")
    /// `307 Temporary Redirect`.
    public static let temporaryRedirect = Status(code: 307, reasonPhrase: "Temporary Redirect")
    /// `308 Permanent Redirect`.
    public static let permanentRedirect = Status(code: 308, reasonPhrase: "Permanent Redirect")
    /// `400 Bad Request`.
    public static let badRequest = Status(code: 400, reasonPhrase: "Bad Request")
    /// `401 Unauthorized`.
    public static let unauthorized = Status(code: 401, reasonPhrase: "Unauthorized")
    /// `403 Forbidden`.
    public static let forbidden = Status(code: 403, reasonPhrase: "Forbidden")
    /// `404 Not Found`.
    public static let notFound = Status(code: 404, reasonPhrase: "Not Found")
    /// `405 Method Not Allowed`.
    public static let methodNotAllowed = Status(code: 405, reasonPhrase: "Method Not Allowed")
    /// `406 Not Acceptable`.
    public static let notAcceptable = Status(code: 406, reasonPhrase: "Not Acceptable")
    /// `408 Request Timeout`.
    public static let requestTimeout = Status(code: 408, reasonPhrase: "Request Timeout")
    /// `409 Conflict`.
    public static let conflict = Status(code: 409, reasonPhrase: "Conflict")
    /// `410 Gone`.
    public static let gone = Status(code: 410, reasonPhrase: "Gone")
    /// `411 Length Required`.
    public static let lengthRequired = Status(code: 411, reasonPhrase: "Length Required")
    /// `412 Precondition Failed`.
    public static let preconditionFailed = Status(code: 412, reasonPhrase: "Precondition Failed")
    /// `413 Content Too Large` (formerly Payload Too Large).
    public static let payloadTooLarge = Status(code: 413, reasonPhrase: "Content Too Large")
    /// `414 URI Too Long`.
    public static let uriTooLong = Status(code: 414, reasonPhrase: "URI Too Long")
    /// `415 Unsupported Media Type`.
    public static let unsupportedMediaType = Status(code: 415, reasonPhrase: "Unsupported Media Type")
    /// `416 Range Not Satisfiable`.
    public static let rangeNotSatisfiable = Status(code: 416, reasonPhrase: "Range Not Satisfiable")
    /// `417 Expectation Failed`.
    public static let expectationFailed = Status(code: 417, reasonPhrase: "Expectation Failed")
    /// `422 Unprocessable Content`.
    public static let unprocessableContent = Status(code: 422, reasonPhrase: "Unprocessable Content")
    /// `426 Upgrade Required`.
    public static let upgradeRequired = Status(code: 426, reasonPhrase: "Upgrade Required")
    /// `429 Too Many Requests`.
    public static let tooManyRequests = Status(code: 429, reasonPhrase: "Too Many Requests")
    /// `431 Request Header Fields Too Large`.
    public static let requestHeaderFieldsTooLarge = Status(code: 431, reasonPhrase: "Request Header Fields Too Large")
    /// `500 Internal Server Error`.
    public static let internalServerError = Status(code: 500, reasonPhrase: "Internal Server Error")
    /// `501 Not Implemented`.
    public static let notImplemented = Status(code: 501, reasonPhrase: "Not Implemented")
    /// `502 Bad Gateway`.
    public static let badGateway = Status(code: 502, reasonPhrase: "Bad Gateway")
    /// `503 Service Unavailable`.
    public static let serviceUnavailable = Status(code: 503, reasonPhrase: "Service Unavailable")
    /// `504 Gateway Timeout`.
    public static let gatewayTimeout = Status(code: 504, reasonPhrase: "Gateway Timeout")
    /// `505 HTTP Version Not Supported`.
    public static let httpVersionNotSupported = Status(code: 505, reasonPhrase: "HTTP Version Not Supported")

    private static let standard: [Status] = [
        .continue, .switchingProtocols, .ok, .created, .accepted, .noContent, .partialContent,
        .movedPermanently, .found, .seeOther, .notModified, .temporaryRedirect, .permanentRedirect,
        .badRequest, .unauthorized, .forbidden, .notFound, .methodNotAllowed, .notAcceptable, .requestTimeout,
        .conflict, .gone, .lengthRequired, .preconditionFailed, .payloadTooLarge, .uriTooLong,
        .unsupportedMediaType, .rangeNotSatisfiable, .expectationFailed, .unprocessableContent, .upgradeRequired,
        .tooManyRequests, .requestHeaderFieldsTooLarge, .internalServerError, .notImplemented, .badGateway,
        .serviceUnavailable, .gatewayTimeout, .httpVersionNotSupported,
    ]

    private static func standardReasonPhrase(for code: Int) -> String? {
        for status in standard where status.code == code {
            return status.reasonPhrase
        }
        return nil
    }
}
