import Foundation
import Glibc
import TestSupport

@testable import Spout

/// Helpers shared by the upstream route tests.
enum RouteTest {
    static let repositoryRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// A Spout service whose upstream is `fixture`, one attempt per call. The attempt timeout is long
    /// by default (a test about timeouts passes a short one): on one loaded core a quick `500` from the
    /// fixture took more than 2 s and turned into a 504.
    static func server(
        upstream fixture: UpstreamFixture,
        attemptTimeoutSeconds: Double = 30,
        _ configure: (inout SpoutConfiguration) -> Void = { _ in }
    ) throws -> SpoutTestServer {
        try SpoutTestServer { configuration in
            configuration.upstream.baseURL = fixture.baseURL.absoluteString
            configuration.upstream.attempts = 1
            configuration.upstream.attemptTimeoutSeconds = attemptTimeoutSeconds
            configuration.upstream.deadlineSeconds = attemptTimeoutSeconds + 1
            configuration.log.requests = true
            configure(&configuration)
        }
    }

    /// The body parsed as a JSON object (empty when it is not one).
    static func object(_ bytes: [UInt8]) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any] ?? [:]
    }

    /// The text parsed as a JSON object (empty when it is not one).
    static func object(_ text: String) -> [String: Any] {
        object(Array(text.utf8))
    }

    /// The body parsed as a JSON array (empty when it is not one).
    static func array(_ bytes: [UInt8]) -> [Any] {
        (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [Any] ?? []
    }

    /// Decodes `text` into `type`, or `nil`.
    static func decode<T: Decodable>(_ type: T.Type, _ text: String) -> T? {
        try? JSONDecoder().decode(type, from: Data(text.utf8))
    }

    /// Decodes `bytes` into `type`, or `nil`.
    static func decode<T: Decodable>(_ type: T.Type, _ bytes: [UInt8]) -> T? {
        try? JSONDecoder().decode(type, from: Data(bytes))
    }

    /// The JSON text of `posts`, as an upstream sends it (their text needs no escaping).
    static func json(_ posts: [Post]) -> String {
        let objects = posts.map { post in
            #"{"userId":\#(post.userId),"id":\#(post.id),"title":"\#(post.title)","body":"\#(post.body)"}"#
        }
        return "[" + objects.joined(separator: ",") + "]"
    }

    /// `count` posts with ids from `firstId`, by user 1.
    static func posts(from firstId: Int, count: Int, bodyBytes: Int = 20) -> [Post] {
        (0..<count).map { offset in
            let id = firstId + offset
            return Post(userId: 1, id: id, title: "post \(id)", body: String(repeating: "b", count: bodyBytes))
        }
    }

    /// The request log's lines for requests to `path` (query excluded).
    static func logLines(_ server: SpoutTestServer, path: String) -> [String] {
        server.log.lines.filter { $0.contains(#""path":"\#(path)""#) }
    }
}

/// Reads a chunked event stream with very long events without keeping or re-scanning them: counts
/// events (blank-line terminated) and keeps the first bytes of each, enough for `id:` or `event:`.
///
/// The general ``StreamClient`` parses SSE text as it goes, which is right for ordinary events but
/// slow for megabyte-long `data:` lines.
final class LargeEventReader {
    let client: LoopbackClient
    private var pending: [UInt8] = []
    private var headDone = false
    private var chunkRemaining = 0
    private var skipCRLF = 0
    private(set) var bodyEnded = false
    /// The first bytes of every complete event, without the `retry:` and comment lines (`: keep-alive`, sent
    /// when the stream idles, as a loaded run makes it) that the stream puts inside the next event's block.
    /// A block without a field is no event (WHATWG SSE) and is not kept.
    private(set) var heads: [String] = []
    /// Where the line being read starts in `current`.
    private var lineStart = 0
    private var current: [UInt8] = []
    private var previousWasNewline = false
    /// The next byte starts a line.
    private var atLineStart = true
    /// The current block has a line that is not a comment.
    private var blockHasField = false

    init(port: Int, path: String, receiveBufferBytes: Int = 4096) throws {
        client = try LoopbackClient(port: port, receiveBufferBytes: receiveBufferBytes)
        try client.sendGet(path)
    }

    /// Reads until `count` events are complete or the body ends.
    func readEvents(untilCount count: Int, timeout: Duration = .seconds(20)) throws {
        while heads.count < count && !bodyEnded {
            let bytes = try client.readSome(timeout: timeout)
            if bytes.isEmpty {
                bodyEnded = true
                return
            }
            feed(bytes)
        }
    }

    /// The events' heads.
    var events: [String] { heads }

    private func feed(_ bytes: [UInt8]) {
        pending += bytes
        var index = 0
        if !headDone {
            guard let end = find([13, 10, 13, 10], in: pending) else { return }
            headDone = true
            index = end + 4
        }
        pending.withUnsafeBufferPointer { buffer in
            while index < buffer.count && !bodyEnded {
                if skipCRLF > 0 {
                    skipCRLF -= 1
                    index += 1
                } else if chunkRemaining > 0 {
                    let take = min(chunkRemaining, buffer.count - index)
                    for byte in buffer[index..<(index + take)] { body(byte) }
                    index += take
                    chunkRemaining -= take
                    if chunkRemaining == 0 { skipCRLF = 2 }
                } else {
                    var lineEnd = index
                    while lineEnd + 1 < buffer.count && !(buffer[lineEnd] == 13 && buffer[lineEnd + 1] == 10) {
                        lineEnd += 1
                    }
                    guard lineEnd + 1 < buffer.count else { break }
                    let size = Int(String(decoding: buffer[index..<lineEnd], as: UTF8.self), radix: 16) ?? 0
                    index = lineEnd + 2
                    if size == 0 { bodyEnded = true } else { chunkRemaining = size }
                }
            }
        }
        pending.removeFirst(min(index, pending.count))
    }

    @inline(__always)
    private func body(_ byte: UInt8) {
        if byte == 10 && previousWasNewline {
            if blockHasField { heads.append(String(decoding: current, as: UTF8.self)) }
            current.removeAll(keepingCapacity: true)
            lineStart = 0
            previousWasNewline = false
            atLineStart = true
            blockHasField = false
            return
        }
        if byte == 10 {
            let line = current[lineStart...]
            if line.first == UInt8(ascii: ":") || line.starts(with: Array("retry:".utf8)) {
                current.removeSubrange(lineStart...)  // not part of what the test compares
                atLineStart = true
                previousWasNewline = true
                return
            }
        }
        if atLineStart && byte != 10 && byte != UInt8(ascii: ":") && !blockHasField { blockHasField = true }
        atLineStart = byte == 10
        previousWasNewline = byte == 10
        if current.count < 64 { current.append(byte) }
        if byte == 10 { lineStart = current.count }
    }

    private func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        return (0...(haystack.count - needle.count)).first { start in
            haystack[start..<(start + needle.count)].elementsEqual(needle)
        }
    }

    /// Lets the kernel take more at once from here on (`SO_RCVBUF`).
    func enlargeReceiveBuffer(bytes: Int) {
        var size = Int32(bytes)
        setsockopt(client.fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }

    func close() {
        client.close()
    }
}
