import Foundation
import HTTPServer
import TestSupport
import Testing

@testable import Spout

/// `Idempotency-Key` on `POST /channels/{name}/events`: the key table, the key's syntax and the fingerprint.
@Suite(.offPool) struct ChannelIdempotencyTests {
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
