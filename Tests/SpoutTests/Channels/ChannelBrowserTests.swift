import Foundation
import TestSupport
import Testing

@testable import Spout

/// A real browser's `EventSource` on a channel: the first request resumes by the `lastEventId` query
/// parameter (it cannot set headers), the reconnect after a dropped connection by the `Last-Event-ID` header
/// the browser sends itself, which wins over the query parameter its URL still carries.
///
/// Skipped without `chromium` unless `SPOUT_REQUIRE_BROWSER` is set (see ``EventSourceBrowserTests``).
@Suite(
    .serialized,
    .offPool(limited: false),
    .enabled(if: HeadlessChromium.testsEnabled),
    .timeLimit(.minutes(3 * TestTiming.scale))
)
struct ChannelBrowserTests {
    @Test func eventSourceGetsEveryChannelEventOnceAcrossAForcedReconnect() async throws {
        let server = try SpoutTestServer { $0.sse.retryMilliseconds = 100 }
        let publisher = try ChannelHTTP(port: server.port)
        var ids = try publisher.publishIDs("browser", channelBody(1...3))
        let relay = try CuttableRelay(targetPort: server.port)
        defer { relay.stop() }
        let harness = try BrowserHarness()
        defer { harness.close() }

        // Resume after the second event: the third is replayed, then the live ones follow.
        try harness.watch("http://127.0.0.1:\(relay.port)/channels/browser?lastEventId=\(ids[1])", closeOnEnd: false)
        _ = try harness.until("the replayed event", "log.messages.length >= 1")
        ids += try publisher.publishIDs("browser", channelBody([4]))
        ids += try publisher.publishIDs("browser", channelBody([5]))
        _ = try harness.until("two live events", "log.messages.length >= 3")

        // Drop the connection; publish while the browser is away (and perhaps while it comes back).
        relay.cutAll()
        _ = try harness.until("the drop", "log.errors.length >= 1")
        for number in 6...10 { ids += try publisher.publishIDs("browser", channelBody([number])) }
        let seen = try harness.until(
            "the reconnect and the rest",
            "log.opens.length >= 2 && log.messages.some((m) => JSON.parse(m.data).n === 10)"
        )
        // One more, live on the new connection, after which nothing else may have arrived.
        ids += try publisher.publishIDs("browser", channelBody([11]))
        _ = try harness.until("the last event", "log.messages.some((m) => JSON.parse(m.data).n === 11)")
        let all = try harness.closeSource()

        #expect(seen.opens.count == 2)
        #expect(seen.errors.map(\.readyState) == [0], "it reconnects (CONNECTING) rather than giving up")
        let received = all.messages.map { message in
            (try? JSONSerialization.jsonObject(with: Data(message.data.utf8)) as? [String: Any])?["n"] as? Int
        }
        #expect(received == Array(3...11), "every event once, in order, across the reconnect")
        #expect(all.messages.map(\.id) == Array(ids[2...]), "each with its channel id as lastEventId")

        let heads = relay.requestHeads
        #expect(heads.count == 2)
        #expect(heads.allSatisfy { $0.contains("lastEventId=\(ids[1])") }, "the URL keeps its query parameter")
        #expect(heads.first.map { Self.header("Last-Event-ID", in: $0) == nil } == true)
        #expect(heads.last.map { Self.header("Last-Event-ID", in: $0) } == ids[4], "the browser resends the last id")
        #expect(server.isHealthy())
        await server.stop()
    }

    /// The value of header `name` in a request head.
    static func header(_ name: String, in head: String) -> String? {
        for line in head.split(separator: "\r\n").dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            if line[..<colon].lowercased() == name.lowercased() {
                return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
        return nil
    }
}
