/// Why a request could not be parsed; each case knows the status to answer with and a lowercase message.
///
/// Offending values are carried as escaped text: printable ASCII as is, any other byte as `\xNN`, at most
/// 64 bytes followed by `...`. They are safe to put in a plain-text error body.
/// After any of these the connection must be closed once the error response is written, because the parser
/// cannot find the start of the next request.
///
/// **Ownership:** A value; thrown by ``RequestParser/next()``.
/// **Thread safety:** Value type; not shared.
public enum ParseError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The request line (or the empty lines before it) is longer than the limit, in bytes. Status 414.
    case requestLineTooLong(limit: Int)
    /// The request line is not `method SP target SP version`. Status 400.
    case invalidRequestLine(String)
    /// The method is empty or not a token. Status 400.
    case invalidMethod(String)
    /// The request-target has a byte outside visible ASCII, or a form its method does not allow. Status 400.
    case invalidTarget(String)
    /// The version is not of the form `HTTP/D.D`. Status 400.
    case invalidVersion(String)
    /// The version is well formed but not HTTP/1.x. Status 505.
    case unsupportedVersion(String)
    /// The connection starts with the HTTP/2 connection preface (`PRI * HTTP/2.0`). Status 505.
    case http2Preface
    /// The connection starts with a TLS handshake record (byte 0x16): a client speaking HTTPS. Status 400.
    case tlsHandshake
    /// A line ends in LF without the CR before it. Status 400.
    case bareLineFeed
    /// The header section is longer than the limit, in bytes. Status 431.
    case headerTooLarge(limit: Int)
    /// The header section has more field lines than the limit. Status 431.
    case tooManyHeaders(limit: Int)
    /// A field line has no colon, an empty name, or a name that is not a token (also whitespace before the colon).
    /// Status 400.
    case invalidHeaderName(String)
    /// A field value contains NUL, CR, LF, DEL or another control byte except HTAB. Status 400.
    case invalidHeaderValue(name: String)
    /// A field line starts with whitespace: obsolete line folding (RFC 9112 §5.2). Status 400.
    case obsoleteLineFolding
    /// An HTTP/1.1 request has no `Host` field (RFC 9112 §3.2). Status 400.
    case missingHost
    /// The request has more than one `Host` field line. Status 400.
    case multipleHosts
    /// The `Host` value is not `host [ ":" port ]` (RFC 9110 §7.2, RFC 3986 §3.2.2; see ``HostField``), or it is
    /// empty although the request-target is not in absolute form. Carries the escaped value. Status 400.
    case invalidHost(String)
    /// `Content-Length` is not a plain non-negative decimal number. Status 400.
    case invalidContentLength(String)
    /// `Content-Length` appears with different values. Status 400.
    case conflictingContentLength
    /// Both `Content-Length` and `Transfer-Encoding` are present: a request-smuggling vector. Status 400.
    case contentLengthWithTransferEncoding
    /// An HTTP/1.0 request carries `Transfer-Encoding`, which HTTP/1.0 does not define (RFC 9112 §6.1). Status 400.
    case transferEncodingWithHTTP1_0
    /// `Transfer-Encoding` is anything but a single final `chunked`. Status 501.
    case unsupportedTransferEncoding(String)
    /// The body (declared or received) is longer than the limit, in bytes. Status 413.
    case bodyTooLarge(limit: Int)
    /// A chunk-size line does not start with a hexadecimal size. Status 400.
    case invalidChunkSize(String)
    /// A chunk extension contains a control byte. Status 400.
    case invalidChunkExtension
    /// A chunk-size line (size plus extensions) is longer than the limit, in bytes. Status 400.
    case chunkLineTooLong(limit: Int)
    /// Chunk data is not followed by CRLF. Status 400.
    case invalidChunkTerminator

    /// The status to answer with before closing the connection.
    public var status: Status {
        switch self {
        case .requestLineTooLong:
            return .uriTooLong
        case .headerTooLarge, .tooManyHeaders:
            return .requestHeaderFieldsTooLarge
        case .bodyTooLarge:
            return .payloadTooLarge
        case .unsupportedVersion, .http2Preface:
            return .httpVersionNotSupported
        case .unsupportedTransferEncoding:
            return .notImplemented
        case .invalidRequestLine, .invalidMethod, .invalidTarget, .invalidVersion, .tlsHandshake, .bareLineFeed,
            .invalidHeaderName, .invalidHeaderValue, .obsoleteLineFolding, .missingHost, .multipleHosts, .invalidHost,
            .invalidContentLength, .conflictingContentLength, .contentLengthWithTransferEncoding,
            .transferEncodingWithHTTP1_0, .invalidChunkSize, .invalidChunkExtension, .chunkLineTooLong,
            .invalidChunkTerminator:
            return .badRequest
        }
    }

    /// A short lowercase message saying what was wrong, suitable as a plain-text error body.
    public var description: String {
        switch self {
        case .requestLineTooLong(let limit):
            return "request line exceeds \(limit) bytes"
        case .invalidRequestLine(let line):
            return "request line must be method, target and version separated by single spaces, got \"\(line)\""
        case .invalidMethod(let method):
            return "method must be a token, got \"\(method)\""
        case .invalidTarget(let target):
            return "invalid request target \"\(target)\""
        case .invalidVersion(let version):
            return "version must look like HTTP/1.1, got \"\(version)\""
        case .unsupportedVersion(let version):
            return "only HTTP/1.0 and HTTP/1.1 are supported, got \"\(version)\""
        case .http2Preface:
            return "prior-knowledge HTTP/2 is not supported; use HTTP/1.1"
        case .tlsHandshake:
            return "received a TLS handshake; this port speaks plain HTTP"
        case .bareLineFeed:
            return "line ends with a bare lf; lines must end with crlf"
        case .headerTooLarge(let limit):
            return "header section exceeds \(limit) bytes"
        case .tooManyHeaders(let limit):
            return "header section has more than \(limit) fields"
        case .invalidHeaderName(let name):
            return "header name must be a token followed by a colon, got \"\(name)\""
        case .invalidHeaderValue(let name):
            return "header \"\(name)\" has a control character in its value"
        case .obsoleteLineFolding:
            return "header line starts with whitespace; obsolete line folding is not allowed"
        case .missingHost:
            return "an HTTP/1.1 request must have a host header"
        case .multipleHosts:
            return "request must not have more than one host header"
        case .invalidHost(let value):
            return "host header must be a host name or ip literal with an optional port, got \"\(value)\""
        case .invalidContentLength(let value):
            return "content-length must be a non-negative decimal integer, got \"\(value)\""
        case .conflictingContentLength:
            return "content-length values disagree"
        case .contentLengthWithTransferEncoding:
            return "content-length and transfer-encoding must not both be present"
        case .transferEncodingWithHTTP1_0:
            return "transfer-encoding is not allowed in an HTTP/1.0 request"
        case .unsupportedTransferEncoding(let value):
            return "only transfer-encoding chunked is supported, got \"\(value)\""
        case .bodyTooLarge(let limit):
            return "body exceeds \(limit) bytes"
        case .invalidChunkSize(let line):
            return "chunk size must be hexadecimal, got \"\(line)\""
        case .invalidChunkExtension:
            return "chunk extension has a control character"
        case .chunkLineTooLong(let limit):
            return "chunk size line exceeds \(limit) bytes"
        case .invalidChunkTerminator:
            return "chunk data must be followed by crlf"
        }
    }

    /// The longest offending value kept in an error, in bytes.
    static let maxQuotedBytes = 64

    /// `bytes` as printable text for an error message: see the type's documentation.
    static func quoted(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        let hex: [Character] = Array("0123456789abcdef")
        var text = ""
        for byte in bytes.prefix(maxQuotedBytes) {
            if byte >= 0x20 && byte < 0x7F && byte != 0x22 && byte != 0x5C {
                text.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                text += "\\x"
                text.append(hex[Int(byte >> 4)])
                text.append(hex[Int(byte & 0x0F)])
            }
        }
        if bytes.count > maxQuotedBytes {
            text += "..."
        }
        return text
    }
}
