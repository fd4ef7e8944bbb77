/// The id of a channel event as clients see it: `<epoch>-<sequence>`, e.g. `mitq0a1c-42`.
///
/// The sequence counts a channel's events from 1 and rises by one per event (a channel dropped as idle and
/// created again counts on from past every id the broker gave out before, so old ids are not misread). The
/// epoch names the broker's history: it is the time the process started, in milliseconds, in base 36, so it
/// changes whenever the history is lost (a restart), and an id from an earlier run is recognised as such
/// instead of being misread as a position in the new history. Clients treat ids as opaque strings; the server
/// parses the ones they send back in `Last-Event-ID`.
///
/// **Thread safety:** value type; not shared.
struct ChannelEventID: Equatable, Sendable, CustomStringConvertible {
    /// The history the id belongs to.
    let epoch: String
    /// The event's position in its channel, from 1.
    let sequence: UInt64

    init(epoch: String, sequence: UInt64) {
        self.epoch = epoch
        self.sequence = sequence
    }

    /// Parses `<epoch>-<sequence>`: an epoch of 1–16 characters `[0-9a-z]` and a decimal sequence of at most
    /// 19 digits. Anything else (empty, other characters, an overflowing number) is `nil`.
    init?(_ text: some StringProtocol) {
        let bytes = Array(text.utf8)
        guard let dash = bytes.lastIndex(of: UInt8(ascii: "-")), dash > 0, dash <= 16 else { return nil }
        let epochBytes = bytes[..<dash]
        let digits = bytes[(dash + 1)...]
        guard epochBytes.allSatisfy(Self.isEpochByte), !digits.isEmpty, digits.count <= 19 else { return nil }
        var sequence: UInt64 = 0
        for digit in digits {
            guard digit >= UInt8(ascii: "0"), digit <= UInt8(ascii: "9") else { return nil }
            // 19 digits stay below 2^64, so this cannot overflow.
            sequence = sequence * 10 + UInt64(digit - UInt8(ascii: "0"))
        }
        self.epoch = String(decoding: epochBytes, as: UTF8.self)
        self.sequence = sequence
    }

    var description: String { "\(epoch)-\(sequence)" }

    /// The epoch of a process that started at `milliseconds` since 1970.
    static func epoch(startedAtMilliseconds milliseconds: UInt64) -> String {
        String(milliseconds, radix: 36)
    }

    private static func isEpochByte(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
            || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
    }
}
