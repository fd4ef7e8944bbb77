import Foundation
import TestSupport
import Testing

@testable import Spout

/// The cap on concurrent subscription streams per subject (`channels.maxSubscriptionsPerSubject`), and the
/// bounded `subject` label of the per-subject metrics.
@Suite struct SubscriptionQuotaTests {
    @Test func aSubjectHoldsAtMostItsCapAndATicketGivesItsPlaceBackOnce() {
        let quota = SubscriptionQuota(maxPerSubject: 2)
        let first = quota.take("sub:a")
        let second = quota.take("sub:a")
        #expect(first != nil && second != nil)
        #expect(quota.take("sub:a") == nil)
        // Another subject has its own count.
        let other = quota.take("sub:b")
        #expect(other != nil)
        first?.release()
        first?.release()  // once only
        #expect(quota.openStreams(of: "sub:a") == 1)
        let third = quota.take("sub:a")
        #expect(third != nil)
        #expect(quota.take("sub:a") == nil)
        // A dropped ticket gives its place back; a subject with none open is forgotten.
        _ = consume third
        #expect(quota.openStreams(of: "sub:a") == 1)
        second?.release()
        other?.release()
        #expect(quota.subjects == 0)
    }

    @Test func subjectLabelsAreBoundedAndNeverAnAddress() {
        let labels = SubjectLabels(capacity: 2)
        func jwt(_ subject: String?) -> ChannelIdentity {
            ChannelIdentity(credential: .jwt(subject: subject), publish: .all, subscribe: .all)
        }
        #expect(labels.label(for: jwt("svc-a")) == "svc-a")
        #expect(labels.label(for: jwt("svc-b")) == "svc-b")
        #expect(labels.label(for: jwt("svc-c")) == "other")
        #expect(labels.label(for: jwt("svc-a")) == "svc-a")
        #expect(labels.label(for: jwt(nil)) == "unnamed")
        #expect(labels.label(for: ChannelIdentity(credential: .none, publish: .all, subscribe: .all)) == "anonymous")
        #expect(
            labels.label(for: ChannelIdentity(credential: .staticToken, publish: .all, subscribe: .all)) == "static"
        )
        let long = String(repeating: "é", count: 100)
        #expect(SubjectLabels.clip(long).utf8.count == SubjectLabels.maxLabelBytes)
        // A flood of new subjects adds no label past the capacity.
        for index in 0..<1_000 { _ = labels.label(for: jwt("flood-\(index)")) }
        #expect(labels.label(for: jwt("flood-999")) == "other")
    }
}

/// The cap over loopback: `n` streams of one subject open, the next is a `429` problem, another subject is not
/// affected, and a stream that ends gives its place back.
@Suite(.offPool) struct SubscriptionQuotaHTTPTests {
    static func token(_ subject: String) -> String {
        ChannelTokenHTTPTests.token(
            #"{"sub":"\#(subject)","exp":\#(ChannelTokenHTTPTests.future),"spout":{"subscribe":["*"],"publish":["*"]}}"#
        )
    }

    @Test(arguments: [1, 8, 30])
    func aSubjectPastItsCapIsRefusedWith429(cap: Int) async throws {
        let server = try ChannelTokenHTTPTests.server {
            $0.channels.maxSubscriptionsPerSubject = cap
        }
        let alice = Self.token("alice")
        var streams: [StreamClient] = []
        defer { for stream in streams { stream.close() } }
        for index in 0..<cap {
            // Half on /channels/{name}, half on /subscribe: both count.
            let path = index % 2 == 0 ? "/channels/c\(index)" : "/subscribe?channel=c\(index)"
            let stream = try StreamClient(port: server.port, path: path, headers: ["Authorization: Bearer \(alice)"])
            try #require(stream.status == 200, "stream \(index)")
            streams.append(stream)
        }
        for path in ["/channels/one-more", "/subscribe?channel=one-more"] {
            let refused = try server.get(path, headers: ["Authorization: Bearer \(alice)"])
            #expect(refused.status == 429)
            #expect(refused.header("Content-Type") == "application/problem+json")
            #expect(refused.text.contains("/problems/too-many-subscriptions"), "\(refused.text)")
            #expect(refused.text.contains("already has \(cap) subscription streams open"), "\(refused.text)")
        }
        // Another subject is not counted with alice.
        let bob = try StreamClient(
            port: server.port,
            path: "/channels/c0",
            headers: ["Authorization: Bearer \(Self.token("bob"))"]
        )
        #expect(bob.status == 200)
        bob.close()
        let metrics = try server.get("/metrics").text
        #expect(metrics.contains("spout_channel_subscriptions_refused_total 2"))
        #expect(metrics.contains(#"spout_channel_subject_subscriptions_total{subject="alice"} \#(cap)"#))
        #expect(metrics.contains(#"spout_channel_subject_subscriptions_total{subject="bob"} 1"#))
        // A stream that ends gives its place back.
        streams.removeFirst().close()
        let quota = try #require(server.service.channels.access.subscriptionQuota)
        #expect(eventually { quota.openStreams(of: "sub:alice") == cap - 1 })
        let again = try StreamClient(
            port: server.port,
            path: "/channels/again",
            headers: ["Authorization: Bearer \(alice)"]
        )
        #expect(again.status == 200)
        again.close()
        await server.stop()
    }

    @Test func anonymousClientsAreCountedByAddress() async throws {
        let server = try SpoutTestServer { $0.channels.maxSubscriptionsPerSubject = 1 }
        let first = try StreamClient(port: server.port, path: "/channels/a")
        defer { first.close() }
        #expect(first.status == 200)
        let second = try StreamClient(port: server.port, path: "/channels/b")
        #expect(second.status == 429)
        second.close()
        #expect(server.service.channels.access.subscriptionQuota?.openStreams(of: "address:127.0.0.1") == 1)
        await server.stop()
    }

    /// The cap's `429` says when to come back: `Retry-After` (and the `retryAfter` member) is sse.heartbeatSeconds
    /// rounded up, the longest a stream whose client went away keeps its place.
    @Test func theRefusalCarriesRetryAfterFromTheHeartbeat() async throws {
        let server = try SpoutTestServer {
            $0.channels.maxSubscriptionsPerSubject = 1
            $0.sse.heartbeatSeconds = 2.5
        }
        let first = try StreamClient(port: server.port, path: "/channels/a")
        defer { first.close() }
        #expect(first.status == 200)
        for path in ["/channels/b", "/subscribe?channel=b"] {
            let refused = try server.get(path)
            #expect(refused.status == 429)
            #expect(refused.header("Retry-After") == "3", "\(path)")
            #expect(refused.text.contains(#""retryAfter":3"#), "\(refused.text)")
        }
        let openAPI = try server.get("/openapi.json").text
        #expect(openAPI.contains("sse.heartbeatSeconds rounded up (3 here)"), "the 429's Retry-After is documented")
        await server.stop()
    }
}
