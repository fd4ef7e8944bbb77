import Foundation
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Where a ``CurlTask``'s events go, on its ``CurlDriver``'s thread: they must be quick and must not block.
protocol CurlTaskOwner: AnyObject, Sendable {
    /// The head of the final response arrived; `false` ends the transfer (its connection is closed).
    func responded(_ response: HTTPURLResponse) -> Bool
    /// Body bytes arrived (decoded, if the upstream compressed them); `false` ends the transfer. The bytes
    /// are valid only during the call.
    func received(_ bytes: UnsafeRawBufferPointer) -> Bool
    /// The transfer ended, with the transport error if it failed. Not called after ``CurlDriver/cancel(_:)``.
    func completed(_ error: URLError?)
}

/// One `GET` on a ``CurlDriver``: the request, its easy handle while it runs, and the head of the response
/// being parsed.
///
/// **Ownership:** created by its owner, which it retains until it reports its end or is cancelled; the
/// driver retains it while its handle is added.
///
/// **Thread safety:** the request and ``isCancelled`` may be read from any thread; the handle, the head and
/// the owner are confined to the driver's thread.
final class CurlTask: @unchecked Sendable {
    // @unchecked Sendable: immutable request fields, an atomic flag, and thread-confined state (see above).
    let url: URL
    /// Header fields of the request, in order.
    let headers: [(name: String, value: String)]
    /// libcurl's own time limit for the whole transfer (a backstop behind the owner's timers).
    let timeoutMilliseconds: Int
    /// Set by ``CurlDriver/cancel(_:)``: the callbacks refuse every byte from then on.
    let isCancelled = Atomic<Bool>(false)

    private(set) var easy: OpaquePointer?  // Confined to the driver's thread.
    private var headerList: OpaquePointer?  // Confined to the driver's thread.
    private var owner: (any CurlTaskOwner)?  // Confined to the driver's thread once started.
    private var head = Head()  // Confined to the driver's thread.

    /// The head of the response being read: the status line and fields of the latest block (a `100
    /// Continue` or a redirect that libcurl follows starts a new one).
    private struct Head {
        var status = 0
        var version = "HTTP/1.1"
        var fields: [String: String] = [:]
        var hasResponded = false
    }

    /// The most header fields kept from one response (libcurl bounds their size).
    static let maxFields = 256
    /// Redirects followed, as `URLSession` would.
    static let maxRedirects = 5
    /// `CURLE_ABORTED_BY_CALLBACK`, reported for transfers ended by ``CurlDriver/invalidate()``.
    static let cancelledCode: Int32 = 42
    /// `CURLE_BAD_FUNCTION_ARGUMENT`, reported when libcurl refused the handle.
    static let internalErrorCode: Int32 = 43

    init(url: URL, headers: [(name: String, value: String)], timeoutMilliseconds: Int, owner: any CurlTaskOwner) {
        self.url = url
        self.headers = headers
        self.timeoutMilliseconds = timeoutMilliseconds
        self.owner = owner
    }

    // MARK: On the driver's thread

    /// Creates and configures the easy handle, or returns `nil` (after ending the transfer) if libcurl
    /// refuses it.
    func makeHandle(curl: LibCurl) -> OpaquePointer? {
        guard let easy = curl.easyInit() else {
            end(code: Self.internalErrorCode, curl: curl)
            return nil
        }
        self.easy = easy
        let me = UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque())
        var list: OpaquePointer?
        for (name, value) in headers {
            // A failed append leaves the list as it was (libcurl frees nothing): keep it and go on.
            if let longer = curl.slistAppend(list, "\(name): \(value)") { list = longer }
        }
        headerList = list
        let settings: [Int32] = [
            curl.set(easy, .noSignal, 1),
            // libcurl copies the strings it is given.
            url.absoluteString.withCString { curl.set(easy, .url, pointer: $0) },
            curl.set(easy, .httpGet, 1),
            curl.restrictToHTTP(easy) ? 0 : 1,
            curl.openSocketsCloseOnExec(easy),
            curl.set(easy, .followLocation, 1),
            curl.set(easy, .maxRedirects, Self.maxRedirects),
            curl.set(easy, .timeoutMilliseconds, max(1, timeoutMilliseconds)),
            curl.set(easy, .connectTimeoutMilliseconds, max(1, timeoutMilliseconds)),
            // Every coding libcurl decodes; the body limit counts decoded bytes.
            "".withCString { curl.set(easy, .acceptEncoding, pointer: $0) },
            curl.set(easy, .httpHeader, pointer: list.map { UnsafeRawPointer($0) }),
            curl.set(easy, .writeFunction, callback: Self.bodyCallback),
            curl.set(easy, .writeData, pointer: me),
            curl.set(easy, .headerFunction, callback: Self.headerCallback),
            curl.set(easy, .headerData, pointer: me),
        ]
        guard settings.allSatisfy({ $0 == 0 }) else {
            releaseHandle(curl: curl)
            end(code: Self.internalErrorCode, curl: curl)
            return nil
        }
        return easy
    }

    /// Frees the easy handle and the header list (after the handle was removed from the multi handle).
    func releaseHandle(curl: LibCurl) {
        if let easy { curl.easyCleanup(easy) }
        if let headerList { curl.slistFreeAll(headerList) }
        easy = nil
        headerList = nil
    }

    /// Reports the end to the owner, once, and lets it go: `code` is libcurl's (0 for a complete response).
    /// A complete response whose head was never handed over (no block ended before the body, none came) is
    /// handed over first; whatever the owner answers, it then hears of the end.
    func end(code: Int32, curl: LibCurl) {
        guard let owner else { return }
        if code == 0, !head.hasResponded, head.status > 0 { _ = deliverHead() }
        self.owner = nil
        owner.completed(code == 0 ? nil : Self.error(for: code, curl: curl))
    }

    /// Lets the owner go without a word (it cancelled).
    func forget() {
        owner = nil
    }

    /// A header line arrived: the status line starts a block, an empty line ends it.
    private func header(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard !isCancelled.load(ordering: .relaxed), owner != nil else { return false }
        // Trailers of a chunked body come after the head was delivered: nothing to do with them.
        guard !head.hasResponded else { return true }
        // Without its line end, cut as bytes: "\r\n" is one Character.
        var end = bytes.count
        while end > 0, bytes[end - 1] == 0x0D || bytes[end - 1] == 0x0A { end -= 1 }
        let line = Substring(String(decoding: UnsafeRawBufferPointer(rebasing: bytes[..<end]), as: UTF8.self))
        if line.hasPrefix("HTTP/") {
            let parts = line.split(separator: " ", maxSplits: 2)
            head = Head(status: parts.count > 1 ? Int(parts[1]) ?? 0 : 0, version: String(parts[0]))
            return true
        }
        guard line.isEmpty else {
            if let colon = line.firstIndex(of: ":"), head.fields.count < Self.maxFields {
                let name = String(line[..<colon]).trimmingCharacters(in: .whitespaces)
                let value = String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
                head.fields[name] = head.fields[name].map { "\($0), \(value)" } ?? value
            }
            return true
        }
        // The end of a block: an interim response, or a redirect libcurl is about to follow, is not the answer.
        if (100..<200).contains(head.status) { return true }
        let location = head.fields.keys.contains { $0.caseInsensitiveCompare("Location") == .orderedSame }
        if (300..<400).contains(head.status) && location { return true }
        return deliverHead()
    }

    /// Body bytes arrived.
    private func body(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard !isCancelled.load(ordering: .relaxed), let owner else { return false }
        if !head.hasResponded, !deliverHead() { return false }
        return owner.received(bytes)
    }

    /// Hands the head to the owner (once: call only while `!head.hasResponded`); returns whether the transfer
    /// goes on.
    private func deliverHead() -> Bool {
        guard let owner else { return false }
        head.hasResponded = true
        guard let response = response() else { return false }
        return owner.responded(response)
    }

    private func response() -> HTTPURLResponse? {
        HTTPURLResponse(url: url, statusCode: head.status, httpVersion: head.version, headerFields: head.fields)
    }

    private static let bodyCallback: LibCurl.Callback = { data, size, count, user in
        let (length, overflow) = size.multipliedReportingOverflow(by: count)
        guard let user, !overflow else { return 0 }
        let task = Unmanaged<CurlTask>.fromOpaque(user).takeUnretainedValue()
        return task.body(UnsafeRawBufferPointer(start: data, count: length)) ? length : 0
    }

    private static let headerCallback: LibCurl.Callback = { data, size, count, user in
        let (length, overflow) = size.multipliedReportingOverflow(by: count)
        guard let user, !overflow else { return 0 }
        let task = Unmanaged<CurlTask>.fromOpaque(user).takeUnretainedValue()
        return task.header(UnsafeRawBufferPointer(start: data, count: length)) ? length : 0
    }

    /// The `URLError` for libcurl's `code`, with libcurl's own words as its description.
    static func error(for code: Int32, curl: LibCurl) -> URLError {
        let kind: URLError.Code =
            switch code {
            case 3: .badURL
            case 5, 6: .cannotFindHost
            case 7: .cannotConnectToHost
            // 1: a reply that is not HTTP/1.x (HTTP/0.9 is refused); 8: a malformed one.
            case 1, 8: .badServerResponse
            case 18, 55, 56: .networkConnectionLost
            case 52: .zeroByteResource
            case 28: .timedOut
            case 35: .secureConnectionFailed
            case 60: .serverCertificateUntrusted
            case 47: .httpTooManyRedirects
            case 61: .cannotDecodeContentData
            case 23, 42: .cancelled
            default: .unknown
            }
        return URLError(kind, userInfo: [NSLocalizedDescriptionKey: curl.describe(code)])
    }
}
