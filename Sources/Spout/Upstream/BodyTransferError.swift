import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Why a ``BodyTransfer`` failed.
enum BodyTransferError: Error, Equatable, Sendable {
    /// `URLSession` reported a transport failure (refused, reset, timed out, cancelled).
    case transport(URLError)
    /// The body is longer than `limit` bytes: `declared` by its `Content-Length`, or `nil` when it was
    /// cut off while arriving.
    case tooLarge(limit: Int, declared: Int?)
    /// The response is not an HTTP response.
    case notHTTP
}
