import Foundation
import TestSupport

/// Reads a streamed (chunked) response incrementally over a raw loopback socket: the head, then the
/// body as it arrives, parsed as server-sent events or NDJSON lines.
final class StreamClient {
    let client: LoopbackClient
    private(set) var status = 0
    private(set) var headers: [(name: String, value: String)] = []
    private var raw: [UInt8] = []
    private var chunkRemaining = 0
    private var expectingChunkCRLF = false
    private(set) var bodyEnded = false
    private(set) var bodyBytes: [UInt8] = []
    private var parser = EventStreamParser()
    private var eventsTaken = 0
    private var ndjsonOffset = 0

    /// Connects and sends `GET path`, then reads the response head.
    convenience init(port: Int, path: String, headers: [String] = [], receiveBufferBytes: Int? = nil) throws {
        try self.init(
            client: LoopbackClient(port: port, receiveBufferBytes: receiveBufferBytes),
            path: path,
            headers: headers
        )
    }

    /// Sends `GET path` on `client` (connected already), then reads the response head.
    init(client: LoopbackClient, path: String, headers: [String] = []) throws {
        self.client = client
        try client.sendGet(path, headers: headers)
        try readHead()
        decode()  // body bytes that came with the head
    }

    func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    private func readHead() throws {
        while true {
            if let end = find([13, 10, 13, 10], in: raw) {
                let text = String(decoding: raw[0..<end], as: UTF8.self)
                raw.removeFirst(end + 4)
                var lines = text.components(separatedBy: "\r\n")
                let statusLine = lines.removeFirst()
                status = Int(statusLine.split(separator: " ")[1]) ?? 0
                for line in lines {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    headers.append(
                        (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
                    )
                }
                return
            }
            let more = try client.readSome(timeout: .seconds(10))
            if more.isEmpty { throw LoopbackClient.Failure.closed }
            raw += more
        }
    }

    /// Reads once from the socket (waiting up to `timeout`) and decodes what arrived.
    /// - Returns: Whether any bytes arrived (false at the end of the connection).
    @discardableResult
    func pump(timeout: Duration = .seconds(10)) throws -> Bool {
        let more = try client.readSome(timeout: timeout)
        if more.isEmpty {
            bodyEnded = true
            return false
        }
        raw += more
        decode()
        return true
    }

    /// Reads at most `bytes` from the socket: a slow reader.
    func pumpSlowly(bytes: Int, timeout: Duration = .seconds(10)) throws {
        let more = try client.readSome(atMost: bytes, timeout: timeout)
        if more.isEmpty { bodyEnded = true }
        raw += more
        decode()
    }

    private func decode() {
        let before = bodyBytes.count
        while !raw.isEmpty && !bodyEnded {
            if expectingChunkCRLF {
                guard raw.count >= 2 else { break }
                raw.removeFirst(2)
                expectingChunkCRLF = false
            } else if chunkRemaining > 0 {
                let take = min(chunkRemaining, raw.count)
                bodyBytes += raw[0..<take]
                raw.removeFirst(take)
                chunkRemaining -= take
                if chunkRemaining == 0 { expectingChunkCRLF = true }
            } else {
                guard let lineEnd = find([13, 10], in: raw) else { break }
                let size = Int(String(decoding: raw[0..<lineEnd], as: UTF8.self), radix: 16) ?? 0
                raw.removeFirst(lineEnd + 2)
                if size == 0 {
                    bodyEnded = true
                } else {
                    chunkRemaining = size
                }
            }
        }
        if bodyBytes.count > before {
            parser.feed(String(decoding: bodyBytes[before...], as: UTF8.self))
        }
    }

    /// All events parsed so far.
    var events: [EventStreamParser.Event] { parser.events }
    var comments: [String] { parser.comments }
    var retry: Int? { parser.retry }

    /// Reads until `count` more events have arrived (or the stream ends) and returns them.
    func nextEvents(_ count: Int, timeout: Duration = .seconds(10)) throws -> [EventStreamParser.Event] {
        while parser.events.count < eventsTaken + count && !bodyEnded {
            try pump(timeout: timeout)
        }
        let taken = Array(parser.events[eventsTaken..<min(parser.events.count, eventsTaken + count)])
        eventsTaken += taken.count
        return taken
    }

    /// Like ``nextEvents(_:timeout:)``, but within one overall deadline, `within` from now (scaled by `TestTiming`):
    /// comments (heartbeats) arriving do not extend the wait. Returns what arrived by then, fewer than `count` if
    /// the deadline passed or the stream ended.
    func nextEvents(_ count: Int, within: Duration) throws -> [EventStreamParser.Event] {
        let deadline = ContinuousClock.now + TestTiming.scaled(within)
        while parser.events.count < eventsTaken + count && !bodyEnded {
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else { break }
            do {
                // pump scales its timeout again; the deadline above bounds the whole wait.
                try pump(timeout: remaining / TestTiming.scale)
            } catch LoopbackClient.Failure.timedOut {
                break
            }
        }
        let taken = Array(parser.events[eventsTaken..<min(parser.events.count, eventsTaken + count)])
        eventsTaken += taken.count
        return taken
    }

    /// Reads until the body ends; returns every event not taken yet.
    func remainingEvents(timeout: Duration = .seconds(10)) throws -> [EventStreamParser.Event] {
        while !bodyEnded { try pump(timeout: timeout) }
        let taken = Array(parser.events[eventsTaken...])
        eventsTaken = parser.events.count
        return taken
    }

    /// Reads until the body ends; returns the complete body.
    func readToEnd(timeout: Duration = .seconds(10)) throws -> [UInt8] {
        while !bodyEnded { try pump(timeout: timeout) }
        return bodyBytes
    }

    func close() {
        client.close()
    }

    private func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count) where haystack[start] == needle[0] {
            if Array(haystack[start..<(start + needle.count)]) == needle { return start }
        }
        return nil
    }
}
