import Foundation
import HTTPServer
import TestSupport
import Testing

@testable import Spout

/// `Idempotency-Key` on `POST /channels/{name}/events` in process, over real loopback sockets; the key table and
/// the fingerprint on their own.
@Suite(.offPool) struct ChannelIdempotencyTests {
    /// The problem's `type` of a response.
    static func problemType(_ response: LoopbackClient.Response) -> String? {
        let object = (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any]
        return object?["type"] as? String
    }

    /// The `ids` of a `202`.
    static func ids(_ response: LoopbackClient.Response) -> [String]? {
        let object = (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any]
        return object?["ids"] as? [String]
    }

    @Test func aRetryWithTheSameKeyGetsTheFirstIDsAndPublishesNothing() async throws {
        let server = try SpoutTestServer()
        let subscriber = try StreamClient.channel("orders", port: server.port)
        defer { subscriber.close() }
        #expect(eventually { server.channelMetrics.subscribers.value == 1 })
        let publisher = try ChannelHTTP(port: server.port)
        defer { publisher.close() }
        let key = #"Idempotency-Key: "8e03978e-40d5-43e8-bc93-6894a57f9324""#

        let first = try publisher.publishIDs("orders", channelBody([1, 2]), headers: [key])
        #expect(first.count == 2)
        // The same request again (a retry after a lost answer), and with the key bare: the first answer, again.
        for headers in [[key], ["Idempotency-Key: 8e03978e-40d5-43e8-bc93-6894a57f9324"]] {
            let again = try publisher.publish("orders", channelBody([1, 2]), headers: headers)
            #expect(again.status == 202, "\(again)")
            #expect(Self.ids(again) == first)
        }
        // The same key on another channel is another key.
        let elsewhere = try publisher.publishIDs("invoices", channelBody([1, 2]), headers: [key])
        #expect(elsewhere.count == 2)
        let next = try publisher.publishIDs("orders", channelBody([3]))

        // The subscriber got each event once: the retries published nothing.
        let frames = try subscriber.frames(3)
        #expect(numbers(frames) == [1, 2, 3])
        #expect(frames.map(\.id) == first + next)
        let list = try server.channelList()
        #expect(list["orders"]?.historyEvents == 3)
        #expect(server.counter("spout_channel_events_published_total") == 5)
        await server.stop()
    }

    @Test func theSameKeyWithAnotherBodyIs422AndPublishesNothing() async throws {
        let server = try SpoutTestServer()
        let publisher = try ChannelHTTP(port: server.port)
        defer { publisher.close() }
        let key = #"Idempotency-Key: "k-1""#
        let first = try publisher.publishIDs("orders", channelBody([1]), headers: [key])

        let other = try publisher.publish("orders", channelBody([2]), headers: [key])
        #expect(other.status == 422, "\(other)")
        #expect(other.header("Content-Type") == "application/problem+json")
        #expect(Self.problemType(other) == "/problems/idempotency-key-reused")
        // Bodies are compared byte for byte: the same JSON written otherwise is another body.
        let spaced = try publisher.publish("orders", #"{ "data": {"n":1} }"#, headers: [key])
        #expect(spaced.status == 422, "\(spaced)")
        // The first body still gets its answer.
        #expect(Self.ids(try publisher.publish("orders", channelBody([1]), headers: [key])) == first)
        #expect(try server.channelList()["orders"]?.historyEvents == 1)
        await server.stop()
    }

    @Test(arguments: [
        [#"Idempotency-Key: "a""#, #"Idempotency-Key: "a""#],  // repeated, even with the same value
        [#"Idempotency-Key: "a""#, #"Idempotency-Key: "b""#],
        [#"Idempotency-Key: """#],  // empty
        ["Idempotency-Key: "],
        [#"Idempotency-Key: "abc"#],  // not closed
        [#"Idempotency-Key: "a"b""#],  // something after the closing quote
        [#"Idempotency-Key: "a\x""#],  // an escape other than \" and \\
        [#"Idempotency-Key: "a", "b""#],  // a list
        ["Idempotency-Key: a b"],  // a bare key with a space
        ["Idempotency-Key: \"" + String(repeating: "k", count: 256) + "\""],  // longer than 255
    ])
    func aMalformedOrRepeatedKeyIs400AndPublishesNothing(headers: [String]) async throws {
        let server = try SpoutTestServer()
        let publisher = try ChannelHTTP(port: server.port)
        defer { publisher.close() }
        let response = try publisher.publish("orders", channelBody([1]), headers: headers)
        #expect(response.status == 400, "\(headers): \(response)")
        #expect(Self.problemType(response) == "/problems/invalid-parameter")
        let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        #expect(object?["parameter"] as? String == "Idempotency-Key")
        #expect(try server.channelList()["orders"] == nil, "nothing was published")
        await server.stop()
    }

    @Test func escapedAndLongestKeysAreKeys() async throws {
        let server = try SpoutTestServer()
        let publisher = try ChannelHTTP(port: server.port)
        defer { publisher.close() }
        for value in [#""a \"quoted\" \\ key""#, "\"" + String(repeating: "k", count: 255) + "\""] {
            let first = try publisher.publishIDs("orders", channelBody([1]), headers: ["Idempotency-Key: \(value)"])
            let again = try publisher.publish("orders", channelBody([1]), headers: ["Idempotency-Key: \(value)"])
            #expect(Self.ids(again) == first, "\(value)")
        }
        #expect(try server.channelList()["orders"]?.historyEvents == 2)
        await server.stop()
    }

    @Test func aFullTableRefusesNewKeysWith503ButKeepsItsPromises() async throws {
        let server = try SpoutTestServer { $0.channels.idempotencyMaxKeys = 2 }
        let publisher = try ChannelHTTP(port: server.port)
        defer { publisher.close() }
        let a = try publisher.publishIDs("orders", channelBody([1]), headers: [#"Idempotency-Key: "a""#])
        _ = try publisher.publishIDs("orders", channelBody([2]), headers: [#"Idempotency-Key: "b""#])
        let third = try publisher.publish("orders", channelBody([3]), headers: [#"Idempotency-Key: "c""#])
        #expect(third.status == 503, "\(third)")
        #expect(third.header("Retry-After") == "1")
        #expect(Self.problemType(third) == "/problems/unavailable")
        // The keys it holds still answer; publishes without a key go on.
        #expect(Self.ids(try publisher.publish("orders", channelBody([1]), headers: [#"Idempotency-Key: "a""#])) == a)
        _ = try publisher.publishIDs("orders", channelBody([4]))
        #expect(try server.channelList()["orders"]?.historyEvents == 3)
        await server.stop()
    }

    @Test func theWindowAndTheLimitAreConfigurable() throws {
        #expect(SpoutConfiguration().channels.idempotencyWindowSeconds == 86_400)
        #expect(SpoutConfiguration().channels.idempotencyMaxKeys == 100_000)
        let command = try SpoutConfiguration.load(
            arguments: [],
            environment: [
                "SPOUT_CHANNELS_IDEMPOTENCY_WINDOW_SECONDS": "60", "SPOUT_CHANNELS_IDEMPOTENCY_MAX_KEYS": "5",
            ]
        )
        guard case .run(let configuration) = command else {
            Issue.record("expected a run command, got \(command)")
            return
        }
        #expect(configuration.channels.idempotencyWindowSeconds == 60)
        #expect(configuration.channels.idempotencyMaxKeys == 5)
        #expect(throws: ConfigError.self) {
            try SpoutConfiguration.load(arguments: [], environment: ["SPOUT_CHANNELS_IDEMPOTENCY_WINDOW_SECONDS": "0"])
        }
        let table = ChannelIdempotency(configuration.channels)
        #expect(table.windowNanoseconds == 60_000_000_000 && table.maxKeys == 5)
    }

    @Test func theKeyIsAQuotedStringOrABareToken() throws {
        #expect(try ChannelIdempotency.key(in: [:]) == nil)
        #expect(try ChannelIdempotency.key(in: ["Idempotency-Key": #""a \"b\" \\ c""#]) == #"a "b" \ c"#)
        #expect(try ChannelIdempotency.key(in: ["Idempotency-Key": " \t8e03978e "]) == "8e03978e")
        #expect(try ChannelIdempotency.key(in: ["Idempotency-Key": #""8e03978e""#]) == "8e03978e")
        let twice = Headers([(name: "Idempotency-Key", value: #""a""#), (name: "idempotency-key", value: #""a""#)])
        #expect(throws: Problem.self) { try ChannelIdempotency.key(in: twice) }
        #expect(throws: Problem.self) { try ChannelIdempotency.key(in: ["Idempotency-Key": "caf\u{e9}"]) }
    }

    /// The OpenAPI document's pattern for the header takes exactly what the server takes, so a generated
    /// client (or schemathesis) never sends a key the document allows and the server refuses.
    @Test(
        arguments: [
            "8e03978e-40d5-43e8-bc93-6894a57f9324", #""8e03978e""#, #""a \"b\" \\ c""#, #""with space""#, "a,b",
            #"a"b"#, #"a\b"#, "", #""""#, #""unclosed"#, #""bad \x escape""#, "caf\u{e9}", "tab\there",
            String(repeating: "k", count: 255), String(repeating: "k", count: 256),
            "\"" + String(repeating: "k", count: 255) + "\"", "\"" + String(repeating: "k", count: 256) + "\"",
            "!#$%&'*+-./:;<=>?@[]^_`{|}~",
        ].map { Abbreviated($0) }
    )
    func theDocumentedPatternTakesWhatTheServerTakes(_ key: Abbreviated<String>) throws {
        let pattern = try NSRegularExpression(pattern: ChannelIdempotency.keyPattern)
        let whole = NSRange(key.value.startIndex..., in: key.value)
        let documented = pattern.firstMatch(in: key.value, range: whole) != nil
        let taken = (try? ChannelIdempotency.key(in: ["Idempotency-Key": key.value])) != nil
        #expect(documented == taken, "pattern says \(documented), the server \(taken)")
    }

    // MARK: The table on its own

    private static let slot = ChannelIdempotency.Slot(channel: "orders", key: "k")
    private static let published = ChannelIdempotency.Published(
        first: ChannelEventID(epoch: "abc", sequence: 7),
        count: 2
    )

    @Test func aTwinWhileTheFirstIsInFlightIs409AndAnotherBodyIs422() {
        let table = ChannelIdempotency(windowSeconds: 10, maxKeys: 10)
        #expect(table.begin(Self.slot, fingerprint: "f1", now: 0) == .proceed)
        #expect(table.begin(Self.slot, fingerprint: "f1", now: 1) == .inFlight)
        #expect(table.begin(Self.slot, fingerprint: "f2", now: 1) == .reused)
        table.complete(Self.slot, published: Self.published, now: 2)
        #expect(table.begin(Self.slot, fingerprint: "f1", now: 3) == .repeated(Self.published))
        #expect(Self.published.ids == ["abc-7", "abc-8"])
        #expect(table.begin(Self.slot, fingerprint: "f2", now: 3) == .reused)
    }

    @Test func aKeyIsRememberedForTheWindowOnlyAndAFailedPublishIsForgotten() {
        let window: UInt64 = 10_000_000_000
        let table = ChannelIdempotency(windowSeconds: 10, maxKeys: 1)
        #expect(table.begin(Self.slot, fingerprint: "f1", now: 5) == .proceed)
        table.complete(Self.slot, published: Self.published, now: 5)
        let other = ChannelIdempotency.Slot(channel: "orders", key: "other")
        #expect(table.begin(other, fingerprint: "f1", now: 5 + window - 1) == .full)
        #expect(table.begin(Self.slot, fingerprint: "f1", now: 5 + window - 1) == .repeated(Self.published))
        // Past the window the key is new again, and its place is free.
        #expect(table.begin(other, fingerprint: "f1", now: 5 + window) == .proceed)
        table.complete(other, published: nil, now: 5 + window)
        #expect(table.count == 0, "a publish that did not happen leaves no key")
        #expect(table.begin(Self.slot, fingerprint: "f2", now: 5 + window) == .proceed)
    }

    @Test func theFingerprintIsSHA256() {
        // FIPS 180-4 examples.
        #expect(SHA256.hex([]) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256.hex(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            SHA256.hex(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        )
        // Several blocks, every byte value (checked against Python's hashlib).
        let bytes = Array((0..<768).map { UInt8($0 % 256) })
        #expect(SHA256.hex(bytes) == "f3a25aa93aa2fbba28d79260535bbd6a5eb0fc1c24a8b0f04e12b484c1dfe363")
    }
}
