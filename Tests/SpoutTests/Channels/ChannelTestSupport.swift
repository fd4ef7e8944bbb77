import Foundation
import TestSupport
import Testing

@testable import Spout

/// A keep-alive connection that sends raw requests (any method, headers and body) and reads each answer.
final class ChannelHTTP {
    let client: LoopbackClient

    init(port: Int) throws {
        client = try LoopbackClient(port: port)
    }

    /// Sends one request and reads its response.
    func send(
        _ method: String,
        _ path: String,
        headers: [String] = [],
        body: [UInt8] = [],
        contentType: String? = "application/json",
        timeout: Duration = .seconds(10)
    ) throws -> LoopbackClient.Response {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: localhost\r\n"
        if let contentType { head += "Content-Type: \(contentType)\r\n" }
        if !body.isEmpty || method == "POST" || method == "PUT" { head += "Content-Length: \(body.count)\r\n" }
        for line in headers { head += line + "\r\n" }
        try client.send(Array((head + "\r\n").utf8) + body)
        return try client.readResponse(timeout: timeout, isHead: method == "HEAD")
    }

    /// `POST /channels/{channel}/events` with `body`.
    func publish(
        _ channel: String,
        _ body: String,
        headers: [String] = [],
        contentType: String? = "application/json"
    ) throws -> LoopbackClient.Response {
        try send(
            "POST",
            "/channels/\(channel)/events",
            headers: headers,
            body: Array(body.utf8),
            contentType: contentType
        )
    }

    /// Publishes `body` and returns the ids of the `202`, failing the test on any other answer.
    func publishIDs(_ channel: String, _ body: String, headers: [String] = []) throws -> [String] {
        let response = try publish(channel, body, headers: headers)
        try #require(response.status == 202, "\(response)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
        #expect(object["channel"] as? String == channel)
        return try #require(object["ids"] as? [String])
    }

    func close() { client.close() }
}

/// One parsed channel event (SSE), with its id taken from the stream.
struct ChannelFrame: Equatable, CustomStringConvertible {
    var type: String
    var id: String
    var data: String

    var description: String { "\(type)#\(id):\(data)" }

    /// The sequence of the id (`<epoch>-<sequence>`).
    var sequence: UInt64? { ChannelEventID(id)?.sequence }

    /// The data as a JSON object.
    var object: [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(data.utf8))) as? [String: Any]
    }
}

extension StreamClient {
    /// Opens `GET /channels/{channel}` (SSE unless the query or headers say otherwise).
    static func channel(
        _ name: String,
        port: Int,
        query: String = "",
        headers: [String] = [],
        receiveBufferBytes: Int? = nil
    ) throws -> StreamClient {
        try StreamClient(
            port: port,
            path: "/channels/\(name)\(query)",
            headers: headers,
            receiveBufferBytes: receiveBufferBytes
        )
    }

    /// The next `count` frames (fewer if the stream ends first).
    func frames(_ count: Int, timeout: Duration = .seconds(10)) throws -> [ChannelFrame] {
        try nextEvents(count, timeout: timeout).map { ChannelFrame(type: $0.type, id: $0.lastEventID, data: $0.data) }
    }

    /// Reads until the body ends; every frame not taken yet.
    func remainingFrames(timeout: Duration = .seconds(10)) throws -> [ChannelFrame] {
        try remainingEvents(timeout: timeout).map { ChannelFrame(type: $0.type, id: $0.lastEventID, data: $0.data) }
    }

    /// Reads frames until one satisfies `done` (included) or the stream ends; at most `limit` frames.
    func frames(until done: (ChannelFrame) -> Bool, limit: Int = 100_000, timeout: Duration = .seconds(10)) throws
        -> [ChannelFrame]
    {
        var frames: [ChannelFrame] = []
        while frames.count < limit {
            guard let frame = try self.frames(1, timeout: timeout).first else { break }
            frames.append(frame)
            if done(frame) { break }
        }
        return frames
    }
}

extension SpoutTestServer {
    /// `GET /channels` as `[name: (subscribers, historyEvents)]`.
    func channelList(headers: [String] = []) throws -> [String: (subscribers: Int, historyEvents: Int, lastId: String?)]
    {
        let response = try get("/channels", headers: headers)
        try #require(response.status == 200, "\(response)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
        let channels = try #require(object["channels"] as? [[String: Any]])
        var list: [String: (subscribers: Int, historyEvents: Int, lastId: String?)] = [:]
        for channel in channels {
            let name = try #require(channel["name"] as? String)
            list[name] = (
                try #require(channel["subscribers"] as? Int), try #require(channel["historyEvents"] as? Int),
                channel["lastId"] as? String
            )
        }
        return list
    }

    /// The value of an unlabelled sample in `GET /metrics`.
    func metric(_ name: String) throws -> Double? {
        let response = try get("/metrics")
        for line in response.text.split(separator: "\n") where line.hasPrefix(name + " ") {
            return Double(line.dropFirst(name.count + 1))
        }
        return nil
    }

    /// The broker's metrics, read directly.
    var channelMetrics: ChannelMetrics { service.metrics.channels }
}

/// `{"data":{"n":n}}` for each of `numbers`, as one body (a batch when more than one).
func channelBody(_ numbers: some Sequence<Int>, padding: Int = 0) -> String {
    let pad = padding > 0 ? #","pad":""# + String(repeating: "x", count: padding) + #"""# : ""
    let items = numbers.map { #"{"data":{"n":\#($0)\#(pad)}}"# }
    return items.count == 1 ? items[0] : "[" + items.joined(separator: ",") + "]"
}

/// The `n` of each frame's `{"n":…}` data (nil for frames without one).
func numbers(_ frames: [ChannelFrame]) -> [Int?] {
    frames.map { $0.object?["n"] as? Int }
}

extension SpoutTestServer {
    /// The value of an unlabelled counter in `GET /metrics` (-1 when it is missing or unreadable, so that a
    /// comparison with an expected count fails).
    func counter(_ name: String) -> Int {
        guard let value = try? metric(name) else { return -1 }
        return Int(value)
    }
}
