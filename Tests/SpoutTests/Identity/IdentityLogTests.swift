import Foundation
import TestSupport
import Testing

@testable import Spout

/// Who a channel request was, in the request log (the token's `sub`, the client a trusted proxy named, and the
/// proxy) and in the per-subject metrics.
@Suite(.offPool) struct IdentityLogTests {
    @Test func theRequestLogNamesTheSubjectTheClientAndTheProxy() async throws {
        let server = try ChannelTokenHTTPTests.server { $0.trustedProxies = ["127.0.0.1"] }
        let http = try ChannelHTTP(port: server.port)
        defer { http.close() }
        let token = ChannelTokenHTTPTests.token(
            #"{"sub":"orders \"eu\"","exp":\#(ChannelTokenHTTPTests.future),"spout":{"publish":["*"]}}"#
        )
        let published = try http.publish(
            "orders",
            channelBody([1]),
            headers: ["Authorization: Bearer \(token)", "X-Forwarded-For: 203.0.113.7"]
        )
        #expect(published.status == 202)
        // Without a token, no sub; the client and proxy still.
        #expect(try http.publish("orders", channelBody([2]), headers: ["X-Forwarded-For: 203.0.113.8"]).status == 401)
        var lines: [[String: Any]] = []
        #expect(
            eventually {
                lines = server.log.lines.compactMap {
                    (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
                }.filter { $0["path"] as? String == "/channels/orders/events" }
                return lines.count == 2
            }
        )
        #expect(lines.first?["sub"] as? String == #"orders "eu""#)
        #expect(lines.first?["client"] as? String == "203.0.113.7")
        #expect(lines.first?["proxy"] as? String == "127.0.0.1")
        #expect(lines.first?["remote"] as? String == "127.0.0.1")
        #expect(lines.last?["sub"] == nil)
        #expect(lines.last?["client"] as? String == "203.0.113.8")
        let metrics = try server.get("/metrics").text
        #expect(metrics.contains(#"spout_channel_subject_publishes_total{subject="orders \"eu\""} 1"#), "\(metrics)")
        await server.stop()
    }

    @Test func withoutTrustedProxiesTheLineHasNoClientOrProxy() async throws {
        let server = try SpoutTestServer()
        let http = try ChannelHTTP(port: server.port)
        defer { http.close() }
        #expect(try http.publish("open", channelBody([1]), headers: ["X-Forwarded-For: 203.0.113.7"]).status == 202)
        var line: [String: Any]?
        #expect(
            eventually {
                line = server.log.lines.compactMap {
                    (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
                }.first { $0["path"] as? String == "/channels/open/events" }
                return line != nil
            }
        )
        #expect(line?["client"] == nil)
        #expect(line?["proxy"] == nil)
        #expect(line?["sub"] == nil)
        let metrics = try server.get("/metrics").text
        #expect(metrics.contains(#"spout_channel_subject_publishes_total{subject="anonymous"} 1"#))
        await server.stop()
    }

    /// A request refused for its channel (`403 channel-not-granted`) is logged under its subject too, as are the
    /// reads of a channel's latest event and presence, and a stream over several channels refused for one of them.
    @Test func refusedAndReadRequestsAreLoggedUnderTheirSubject() async throws {
        let server = try ChannelTokenHTTPTests.server()
        let http = try ChannelHTTP(port: server.port)
        defer { http.close() }
        let token = ChannelTokenHTTPTests.token(
            #"{"sub":"svc-7","exp":\#(ChannelTokenHTTPTests.future),"spout":{"publish":["orders.*"],"subscribe":["*"]}}"#
        )
        let refused = try http.publish("billing", channelBody([1]), headers: ["Authorization: Bearer \(token)"])
        #expect(refused.status == 403)
        #expect(
            try http.send("GET", "/channels/billing/latest", headers: ["Authorization: Bearer \(token)"]).status == 404
        )
        #expect(
            try http.send("GET", "/channels/billing/presence", headers: ["Authorization: Bearer \(token)"]).status
                == 200
        )
        // A stream over several channels, refused for one it may not follow.
        let reader = ChannelTokenHTTPTests.token(
            #"{"sub":"svc-7","exp":\#(ChannelTokenHTTPTests.future),"spout":{"subscribe":["news.*"]}}"#
        )
        let multi = try http.send(
            "GET",
            "/subscribe?channel=news.a&channel=billing",
            headers: ["Authorization: Bearer \(reader)"]
        )
        #expect(multi.status == 403)
        var lines: [[String: Any]] = []
        #expect(
            eventually {
                lines = server.log.lines.compactMap {
                    (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
                }.filter {
                    let path = $0["path"] as? String ?? ""
                    return path.hasPrefix("/channels/billing") || path.hasPrefix("/subscribe")
                }
                return lines.count == 4
            }
        )
        #expect(lines.map { $0["status"] as? Int } == [403, 404, 200, 403])
        #expect(lines.allSatisfy { $0["sub"] as? String == "svc-7" }, "\(lines)")
        await server.stop()
    }
}
