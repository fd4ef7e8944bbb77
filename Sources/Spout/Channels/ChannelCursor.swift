/// The resume point of a multi-channel subscription (`GET /subscribe`): for each of its channels, the id of
/// the last event it delivered (or where the channel was when it joined), in one compact, URL-safe string sent
/// as the SSE `id:` of every event, so that `Last-Event-ID` resumes every channel at once.
///
/// The text is `1.<epochs>.<entries>`:
/// - `<epochs>`: the distinct epochs of the ids, joined by `~` (one in process; over Redis each channel has its
///   generation);
/// - `<entries>`: joined by `~`, each the channel's key (8 base64url characters: 48 bits of the FNV-1a hash of
///   its name, see ``key(of:)``), the index of its epoch in base 36, `-`, and its sequence in base 36.
///
/// Only `A–Z a–z 0–9 - _ . ~` appear, so it goes in a URL (`?lastEventId=`) and a header as it is. A channel
/// without a position (a Redis channel that has no generation yet) has no entry: it resumes from its start.
/// Two channels of one subscription whose keys collide both get an entry; the reader cannot tell them apart and
/// treats both as unknown (a `reset`), never as each other's.
///
/// **Thread safety:** value type; not shared.
struct ChannelCursor: Equatable {
    /// One channel's place: the epoch and sequence of its id.
    struct Position: Equatable, Sendable {
        var epoch: String
        var sequence: UInt64

        /// The id this position stands for, `<epoch>-<sequence>`.
        var id: String { ChannelEventID(epoch: epoch, sequence: sequence).description }
    }

    /// What the cursor says of a channel, by key: its position, or nil when two entries share the key.
    private(set) var entries: [UInt64: Position?] = [:]

    /// The format's version, its first character.
    static let version: UInt8 = UInt8(ascii: "1")
    /// Characters of a sequence in base 36, at most (2^64 needs 13).
    static let maxSequenceDigits = 13

    /// What the cursor says of the channel `name`: its position; `nil` when it has no entry; `.some(nil)` when
    /// the entry is ambiguous (another entry has the same key).
    func position(of name: String) -> Position?? {
        entries[Self.key(of: name)]
    }

    /// Base-36 digits of an epoch index, at most (46,655 epochs, past `channels.maxChannelsPerSubscription`'s
    /// largest value).
    static let maxIndexDigits = 3

    /// The longest cursor text for `maxEntries` channels: an entry is at most 8 + 3 + 1 + 13 characters and a
    /// separator, an epoch at most 16 and a separator.
    static func maxLength(entries maxEntries: Int) -> Int {
        let entries = max(1, maxEntries)
        return 4 &+ entries.multipliedReportingOverflow(by: 26 &+ 17).partialValue
    }

    // MARK: Writing

    /// Appends the cursor of `positions` (a key and a position per channel, in the subscription's order) to
    /// `bytes`.
    static func append(_ positions: some Sequence<(key: UInt64, position: Position)>, to bytes: inout [UInt8]) {
        append(positions.lazy.map { (key: $0.key, position: Optional($0.position)) }, to: &bytes) { _, _ in }
    }

    /// Appends the cursor of `positions` as ``append(_:to:)`` does (a nil position: no entry), and calls
    /// `entryWritten` with each entry's index in `positions` and where the digits of its sequence are in `bytes`.
    static func append(
        _ positions: some Sequence<(key: UInt64, position: Position?)>,
        to bytes: inout [UInt8],
        entryWritten: (_ index: Int, _ sequenceDigits: Range<Int>) -> Void
    ) {
        var epochs: [String] = []
        var body: [UInt8] = []
        var written: [(index: Int, digits: Range<Int>)] = []
        for (index, (key, position)) in positions.enumerated() {
            guard let position else { continue }
            let epochIndex: Int
            if let found = epochs.firstIndex(of: position.epoch) {
                epochIndex = found
            } else {
                epochIndex = epochs.count
                epochs.append(position.epoch)
            }
            if !body.isEmpty { body.append(UInt8(ascii: "~")) }
            appendKey(key, to: &body)
            appendBase36(UInt64(epochIndex), to: &body)
            body.append(UInt8(ascii: "-"))
            let start = body.count
            appendBase36(position.sequence, to: &body)
            written.append((index, start..<body.count))
        }
        bytes.append(version)
        bytes.append(UInt8(ascii: "."))
        for (index, epoch) in epochs.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: "~")) }
            bytes.append(contentsOf: epoch.utf8)
        }
        bytes.append(UInt8(ascii: "."))
        let bodyStart = bytes.count
        bytes.append(contentsOf: body)
        for (index, digits) in written {
            entryWritten(index, (bodyStart &+ digits.lowerBound)..<(bodyStart &+ digits.upperBound))
        }
    }

    /// How many base-36 digits ``appendBase36(_:to:)`` writes for `value`.
    static func base36Count(_ value: UInt64) -> Int {
        var count = 1
        var rest = value / 36
        while rest > 0 {
            count &+= 1
            rest /= 36
        }
        return count
    }

    /// Writes `value` in base 36 over `bytes[digits]`, which must be exactly ``base36Count(_:)`` long.
    static func writeBase36(_ value: UInt64, over digits: Range<Int>, in bytes: inout [UInt8]) {
        var rest = value
        var index = digits.upperBound
        while index > digits.lowerBound {
            index &-= 1
            bytes[index] = base36[Int(rest % 36)]
            rest /= 36
        }
    }

    /// The key of channel `name` in a cursor: the low 48 bits of its FNV-1a hash.
    static func key(of name: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
        }
        return hash & 0xFFFF_FFFF_FFFF
    }

    private static let base64URL = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    private static let base36 = Array("0123456789abcdefghijklmnopqrstuvwxyz".utf8)

    /// The key's 48 bits as 8 base64url characters, most significant first.
    static func appendKey(_ key: UInt64, to bytes: inout [UInt8]) {
        var shift = 42
        while shift >= 0 {
            bytes.append(base64URL[Int((key >> UInt64(shift)) & 63)])
            shift -= 6
        }
    }

    /// Appends `value` in base 36, most significant digit first, with no allocation of its own: a multi-channel
    /// stream writes two of these per channel into every event's cursor (bench/README.md, "Channels at scale":
    /// the two arrays this used to build per number were most of a 50-channel subscriber's cost per event).
    static func appendBase36(_ value: UInt64, to bytes: inout [UInt8]) {
        // The place value of the leading digit: at most 36^12, since 36^13 > 2^64 (no overflow).
        var scale: UInt64 = 1
        while value / scale >= 36 { scale &*= 36 }
        var remaining = value
        while true {
            bytes.append(base36[Int(remaining / scale)])
            remaining %= scale
            if scale == 1 { break }
            scale /= 36
        }
    }

    // MARK: Reading

    /// Reads a cursor, strictly: `nil` for anything that is not one this server could have written (wrong
    /// version, characters, lengths or counts; more than `maxEntries` entries; an epoch index out of range; an
    /// epoch no entry uses; a sequence past 2^64).
    init?(_ text: String, maxEntries: Int) {
        let bytes = Array(text.utf8)
        guard bytes.count >= 3, bytes.count <= Self.maxLength(entries: maxEntries), bytes[0] == Self.version,
            bytes[1] == UInt8(ascii: ".")
        else { return nil }
        let rest = bytes[2...]
        guard let dot = rest.firstIndex(of: UInt8(ascii: ".")) else { return nil }
        let epochText = rest[..<dot]
        let entryText = rest[(dot + 1)...]
        // The epochs: none only when there are no entries.
        var epochs: [String] = []
        if !epochText.isEmpty {
            for part in epochText.split(separator: UInt8(ascii: "~"), omittingEmptySubsequences: false) {
                guard !part.isEmpty, part.count <= 16, part.allSatisfy(Self.isBase36Digit) else { return nil }
                epochs.append(String(decoding: part, as: UTF8.self))
            }
        }
        guard epochs.count <= max(0, maxEntries) else { return nil }
        var used = [Bool](repeating: false, count: epochs.count)
        var entries: [UInt64: Position?] = [:]
        var count = 0
        if !entryText.isEmpty {
            for part in entryText.split(separator: UInt8(ascii: "~"), omittingEmptySubsequences: false) {
                count += 1
                guard count <= maxEntries, part.count >= 11 else { return nil }
                let keyEnd = part.startIndex + 8
                guard let key = Self.readKey(part[..<keyEnd]) else { return nil }
                let tail = part[keyEnd...]
                guard let dash = tail.firstIndex(of: UInt8(ascii: "-")),
                    let index = Self.readBase36(tail[..<dash], maxDigits: Self.maxIndexDigits),
                    let sequence = Self.readBase36(tail[(dash + 1)...], maxDigits: Self.maxSequenceDigits),
                    index < UInt64(epochs.count)
                else { return nil }
                used[Int(index)] = true
                let position = Position(epoch: epochs[Int(index)], sequence: sequence)
                // A second entry with the key makes it ambiguous: stored as a nil position.
                entries.updateValue(entries[key] == nil ? position : nil, forKey: key)
            }
        }
        guard used.allSatisfy({ $0 }) else { return nil }
        self.entries = entries
    }

    private static func isBase36Digit(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
            || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
    }

    private static func readKey(_ text: ArraySlice<UInt8>) -> UInt64? {
        var key: UInt64 = 0
        for byte in text {
            let value: UInt8
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = byte &- UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = byte &- UInt8(ascii: "a") &+ 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = byte &- UInt8(ascii: "0") &+ 52
            case UInt8(ascii: "-"): value = 62
            case UInt8(ascii: "_"): value = 63
            default: return nil
            }
            key = key << 6 | UInt64(value)
        }
        return key
    }

    /// A base-36 number of 1…`maxDigits` digits without a superfluous leading zero, that fits in 64 bits.
    private static func readBase36(_ text: ArraySlice<UInt8>, maxDigits: Int) -> UInt64? {
        guard !text.isEmpty, text.count <= maxDigits, text.count == 1 || text.first != UInt8(ascii: "0") else {
            return nil
        }
        var value: UInt64 = 0
        for byte in text {
            let digit: UInt64
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt64(byte &- UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): digit = UInt64(byte &- UInt8(ascii: "a")) &+ 10
            default: return nil
            }
            let (shifted, overflow) = value.multipliedReportingOverflow(by: 36)
            guard !overflow else { return nil }
            let (sum, carry) = shifted.addingReportingOverflow(digit)
            guard !carry else { return nil }
            value = sum
        }
        return value
    }
}

/// A subscription's cursor kept written (``ChannelCursor``'s text) between events: a multi-channel stream sends it
/// with every event, and one event moves one channel, so the text is rewritten in place, the channel's sequence
/// digits only, when that channel keeps its epoch and its sequence keeps its number of digits (nearly always), and
/// written again from every channel's position otherwise (a channel added, reset or given its first position, an
/// epoch changed, a sequence growing a digit). Either way the text is the one ``ChannelCursor/append(_:to:)``
/// writes for the same positions.
///
/// Channels are identified by their index in the subscription's order (its legs are only ever appended).
///
/// **Thread safety:** value type; owned by one subscription, on its loop.
struct ChannelCursorText {
    /// The text as last written (valid only while ``isCurrent``).
    private(set) var bytes: [UInt8] = []
    /// Per channel: its epoch and the place of its sequence's digits in `bytes`; nil when it has no entry.
    private var entries: [(epoch: String, digits: Range<Int>)?] = []
    /// Whether `bytes` stands for every channel's position now.
    private(set) var isCurrent = false

    /// Something other than one channel's move changed (a channel added, a reset): written again next time.
    mutating func invalidate() { isCurrent = false }

    /// Channel `index` moved to `position`: the text follows in place when it can, or is written again next time.
    mutating func moved(_ index: Int, to position: ChannelCursor.Position?) {
        guard isCurrent else { return }
        guard let position, index < entries.count, let entry = entries[index], entry.epoch == position.epoch,
            ChannelCursor.base36Count(position.sequence) == entry.digits.count
        else {
            isCurrent = false
            return
        }
        ChannelCursor.writeBase36(position.sequence, over: entry.digits, in: &bytes)
    }

    /// The text for the channels' positions now: the kept one, or, when it is not current, the one written from
    /// `positions()` (every channel's key and position, in order).
    mutating func text(_ positions: () -> [(key: UInt64, position: ChannelCursor.Position?)]) -> [UInt8] {
        if !isCurrent {
            let all = positions()
            var written: [UInt8] = []
            written.reserveCapacity(4 &+ all.count &* 20)
            var entries = [(epoch: String, digits: Range<Int>)?](repeating: nil, count: all.count)
            ChannelCursor.append(all, to: &written) { index, digits in
                if let position = all[index].position { entries[index] = (position.epoch, digits) }
            }
            bytes = written
            self.entries = entries
            isCurrent = true
        }
        return bytes
    }
}
