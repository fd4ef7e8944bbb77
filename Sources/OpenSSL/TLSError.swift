/// Why a ``TLSContext`` could not be made (at start-up, or on a reload), or an engine could not be started.
///
/// The text says what an operator must fix: which file, and OpenSSL's reason.
///
/// **Ownership:** A value.
/// **Thread safety:** Value type; not shared.
public enum TLSError: Error, Equatable, Sendable, CustomStringConvertible {
    /// OpenSSL 3 (`libssl.so.3`, `libcrypto.so.3`) is not on this machine, or lacks a function TLS needs. A
    /// service configured for TLS must refuse to start.
    case libraryUnavailable(String)
    /// The certificate chain file could not be read or is not a PEM certificate chain.
    case certificateFile(path: String, reason: String)
    /// The private key file could not be read, is not a PEM private key, or does not match the certificate.
    case privateKeyFile(path: String, reason: String)
    /// The CA file to verify servers with could not be read or holds no PEM certificate.
    case caFile(path: String, reason: String)
    /// The OCSP response file to staple could not be read or is not a successful DER OCSP response.
    case ocspResponseFile(path: String, reason: String)
    /// The system's CA store could not be loaded.
    case systemTrustStore(reason: String)
    /// A setting OpenSSL refused (an empty or over-long ALPN protocol, an invalid server name), or an allocation
    /// that failed.
    case configuration(String)

    /// A short lowercase message saying what went wrong and where.
    public var description: String {
        switch self {
        case .libraryUnavailable(let reason):
            "tls is unavailable: \(reason)"
        case .certificateFile(let path, let reason):
            "tls certificate file \(path): \(reason)"
        case .privateKeyFile(let path, let reason):
            "tls private key file \(path): \(reason)"
        case .caFile(let path, let reason):
            "tls ca file \(path): \(reason)"
        case .ocspResponseFile(let path, let reason):
            "tls ocsp response file \(path): \(reason)"
        case .systemTrustStore(let reason):
            "the system's ca certificates could not be loaded: \(reason)"
        case .configuration(let reason):
            "tls configuration: \(reason)"
        }
    }
}

/// Why a TLS connection failed: a handshake refused, a certificate not trusted, bytes that are not TLS.
///
/// ``reason`` is a small closed set, fit for a metrics label ("failures by reason"); ``message`` is OpenSSL's
/// text, for the log.
///
/// **Ownership:** A value.
/// **Thread safety:** Value type; not shared.
public struct TLSFailure: Error, Equatable, Sendable, CustomStringConvertible {
    /// The kind of failure.
    public enum Reason: String, Sendable, CaseIterable {
        /// The peer's certificate has expired (or, with ``certificateNotYetValid``, is not valid yet).
        case certificateExpired = "certificate_expired"
        /// The peer's certificate is not valid yet.
        case certificateNotYetValid = "certificate_not_yet_valid"
        /// The peer's certificate is for another host name.
        case hostnameMismatch = "hostname_mismatch"
        /// The peer's certificate does not chain to a trusted CA (self-signed, unknown issuer).
        case untrustedCertificate = "untrusted_certificate"
        /// The peer's certificate failed verification for another reason (the message says which).
        case certificateInvalid = "certificate_invalid"
        /// The peer sent a fatal alert (it refused our certificate, our protocol versions or our suites).
        case alertReceived = "alert_received"
        /// The peer offers no protocol version we accept (TLS 1.0 or 1.1 only).
        case unsupportedProtocol = "unsupported_protocol"
        /// The peer offers no cipher suite we accept.
        case noSharedCipher = "no_shared_cipher"
        /// The peer spoke plain HTTP (or an HTTP proxy `CONNECT`) to a TLS port.
        case plaintextHTTP = "plaintext_http"
        /// The bytes are not a valid TLS record or message.
        case protocolError = "protocol_error"
        /// OpenSSL failed for a reason of its own (out of memory).
        case internalError = "internal_error"
    }

    /// The kind of failure.
    public var reason: Reason
    /// OpenSSL's words for it ("certificate has expired", "http request").
    public var message: String

    public init(reason: Reason, message: String) {
        self.reason = reason
        self.message = message
    }

    public var description: String { "tls \(reason.rawValue): \(message)" }
}
