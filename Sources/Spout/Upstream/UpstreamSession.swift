import Foundation

/// What an ``UpstreamClient``'s transfers share: the header fields every request carries and the
/// ``CurlDriver`` they run on.
///
/// No transfer blocks its caller: starting and cancelling one hand the driver's thread a command, so a
/// route that subscribes on an event loop, a client leaving and a deadline's timer all return at once
/// whatever the upstream does. See ``CurlDriver`` for why the transfers do not go through `URLSession`.
///
/// **Ownership:** one per ``UpstreamClient``; invalidated by ``invalidate()`` or when released.
///
/// **Thread safety:** safe to call from any thread.
final class UpstreamSession: Sendable {
    /// Where the transfers run, or `nil` when the system's libcurl could not be loaded (every transfer then
    /// fails with ``unavailable``).
    let driver: CurlDriver?
    /// The fields every request carries, before each transfer's own.
    let sessionHeaders: [(name: String, value: String)]
    /// Their names, lowercased: a transfer's field of one of these names is not sent again.
    private let sessionHeaderNames: Set<String>

    /// Why transfers fail when there is no driver.
    static let unavailable = "libcurl.so.4 (the system's libcurl, which FoundationNetworking uses) could not be loaded"

    /// - Parameter additionalHeaders: Fields every request carries, besides `Accept: application/json` and
    ///   `User-Agent: spout` (which they cannot replace).
    init(additionalHeaders: [String: String] = [:]) {
        driver = CurlDriver()
        let fixed = ["Accept": "application/json", "User-Agent": "spout"]
        sessionHeaders = additionalHeaders.merging(fixed) { _, fixed in fixed }
            .sorted { $0.key < $1.key }
            .map { (name: $0.key, value: $0.value) }
        sessionHeaderNames = Set(sessionHeaders.map { $0.name.lowercased() })
    }

    deinit {
        driver?.invalidate()
    }

    /// The fields of a request: the session's, then `extra` (a field of the session's own is not repeated).
    func headers(adding extra: [String: String]) -> [(name: String, value: String)] {
        guard !extra.isEmpty else { return sessionHeaders }
        return sessionHeaders
            + extra.sorted { $0.key < $1.key }
            .filter { !sessionHeaderNames.contains($0.key.lowercased()) }
            .map { (name: $0.key, value: $0.value) }
    }

    /// The transfers whose connections are open or opening.
    var runningTransfers: Int { driver?.activeTransfers ?? 0 }

    /// Ends every transfer (as cancelled) and refuses new ones. For the service's shutdown.
    func invalidate() {
        driver?.invalidate()
    }
}
