import HTTPServer
import Reactive

/// `Idempotency-Key` on `POST /channels/{name}/events` (draft-ietf-httpapi-idempotency-key-header): a publisher
/// that sends a key may retry the same request (after a timeout, a `503`, a dead replica) without publishing its
/// events twice.
///
/// - the same key on the same channel with the same body (its SHA-256, the *fingerprint*) within
///   `channels.idempotencyWindowSeconds` of the first success gets the first `202` again, with the same ids, and
///   publishes nothing;
/// - the same key with another body is `422` (`idempotency-key-reused`);
/// - the same key while its first request is still being answered on this replica is `409`
///   (`idempotency-key-in-flight`).
///
/// In process, this table remembers the keys. Over Redis, the publish script checks and stores the key in the same
/// atomic step as the events (``RedisChannelStore``), so every replica, and a replica started later, honours it;
/// the table then only tracks the requests in flight on this replica.
///
/// The table holds at most `channels.idempotencyMaxKeys` keys (remembered and in flight). When it is full after
/// dropping the expired ones, a publish with a new key is refused (`503`, nothing published): the promise made to
/// the keys it holds is kept, none is forgotten early.
///
/// **Ownership:** created once by ``ChannelService``.
///
/// **Thread safety:** safe from any thread: all state under `lock`, which is never held while calling out.
final class ChannelIdempotency: @unchecked Sendable {
    // @unchecked Sendable: `entries`, `expiries`, `expiryHead` and `serial` are only touched under `lock`.

    /// Where a key stands for one channel.
    struct Slot: Hashable {
        let channel: String
        let key: String
    }

    /// The ids a remembered publish got: consecutive, so the first and the count say them all.
    struct Published: Equatable, Sendable {
        let first: ChannelEventID
        let count: Int

        init(first: ChannelEventID, count: Int) {
            self.first = first
            self.count = count
        }

        /// `ids`, if they are consecutive ids of one epoch (as every publish's are); nil otherwise.
        init?(ids: [String]) {
            guard let head = ids.first.flatMap({ ChannelEventID($0) }) else { return nil }
            for (offset, id) in ids.enumerated() {
                let expected = head.sequence.addingReportingOverflow(UInt64(offset))
                guard !expected.overflow, ChannelEventID(id) == ChannelEventID(epoch: head.epoch, sequence: expected.0)
                else { return nil }
            }
            self.init(first: head, count: ids.count)
        }

        var ids: [String] {
            (0..<UInt64(count)).map { ChannelEventID(epoch: first.epoch, sequence: first.sequence &+ $0).description }
        }
    }

    /// What ``begin(_:fingerprint:now:)`` decided.
    enum Begin: Equatable {
        /// Go ahead and publish; then call ``complete(_:published:now:)``.
        case proceed
        /// This key published these within the window: answer them again, publish nothing.
        case repeated(Published)
        /// The key's first request is still being answered (`409`).
        case inFlight
        /// The key was used with another body (`422`).
        case reused
        /// The table is at its limit (`503`, nothing published).
        case full
    }

    private enum Entry {
        case inFlight(fingerprint: String)
        case done(fingerprint: String, published: Published, serial: UInt64)
    }

    /// Nanoseconds a key is remembered after its publish.
    let windowNanoseconds: UInt64
    /// The most keys held, remembered and in flight together.
    let maxKeys: Int
    private let lock = Lock()
    private var entries: [Slot: Entry] = [:]
    /// Remembered keys in the order they expire (one window for all: the order they were stored), from
    /// `expiryHead` on.
    private var expiries: [(slot: Slot, serial: UInt64, at: UInt64)] = []
    private var expiryHead = 0
    private var serial: UInt64 = 0

    init(windowSeconds: Double, maxKeys: Int) {
        let nanoseconds = (max(0, windowSeconds) * 1e9).rounded()
        windowNanoseconds = nanoseconds >= 1.8e19 ? UInt64.max : UInt64(nanoseconds)
        self.maxKeys = max(1, maxKeys)
    }

    convenience init(_ configuration: SpoutConfiguration.Channels) {
        self.init(windowSeconds: configuration.idempotencyWindowSeconds, maxKeys: configuration.idempotencyMaxKeys)
    }

    /// Keys held now (remembered or in flight), expired ones not yet dropped included.
    var count: Int { lock.withLock { entries.count } }

    /// Looks `slot` up and, when it is new, marks it in flight.
    func begin(_ slot: Slot, fingerprint: String, now: UInt64) -> Begin {
        lock.withLock {
            dropExpired(now: now)
            switch entries[slot] {
            case .inFlight(let held)?:
                return held == fingerprint ? .inFlight : .reused
            case .done(let held, let published, _)?:
                return held == fingerprint ? .repeated(published) : .reused
            case nil:
                guard entries.count < maxKeys else { return .full }
                entries[slot] = .inFlight(fingerprint: fingerprint)
                return .proceed
            }
        }
    }

    /// Ends `slot`'s flight: remembers `published` for the window, or forgets the key (nothing was published, or
    /// Redis remembers it).
    func complete(_ slot: Slot, published: Published?, now: UInt64) {
        lock.withLock {
            guard case .inFlight(let fingerprint)? = entries[slot] else { return }
            guard let published else {
                entries[slot] = nil
                return
            }
            serial &+= 1
            entries[slot] = .done(fingerprint: fingerprint, published: published, serial: serial)
            let expiry = now.addingReportingOverflow(windowNanoseconds)
            expiries.append((slot, serial, expiry.overflow ? UInt64.max : expiry.partialValue))
        }
    }

    /// Drops the remembered keys whose window is over. Under `lock`.
    private func dropExpired(now: UInt64) {
        while expiryHead < expiries.count, expiries[expiryHead].at <= now {
            let (slot, serial, _) = expiries[expiryHead]
            if case .done(_, _, serial)? = entries[slot] { entries[slot] = nil }
            expiryHead += 1
        }
        // Compacted once the dropped part is the larger half, so the array stays within twice the keys held.
        if expiryHead > 64, expiryHead * 2 > expiries.count {
            expiries.removeFirst(expiryHead)
            expiryHead = 0
        }
    }
}

extension ChannelIdempotency {
    /// The longest key, in bytes.
    static let maxKeyBytes = 255

    /// The keys ``key(in:)`` takes, as an ECMA-262 pattern for the OpenAPI document: a bare token of visible ASCII
    /// without `"`, `,` or `\`, or a Structured Fields string of printable ASCII whose `"` and `\` are escaped;
    /// 1–255 characters once unquoted.
    static let keyPattern =
        #"^(?:[!#-+\--\[\]-~]{1,255}|"(?:[ !#-\[\]-~]|\\["\\]){1,255}")$"#

    /// The request's `Idempotency-Key`, nil when it has none: a Structured Fields string (`"8e03978e-…"`, the
    /// draft's form) or, for clients that send it bare, a token of visible ASCII without `"`, `\` or `,`; either
    /// way 1–255 characters, and `"abc"` and `abc` are the same key. Sent twice, empty, or otherwise malformed is
    /// `400`.
    static func key(in headers: Headers) throws(Problem) -> String? {
        guard let raw = try Routes.singleHeader("Idempotency-Key", in: headers) else { return nil }
        let value = Array(raw.utf8).trimmingOWS()
        func malformed(_ why: String) -> Problem {
            .invalidParameter(
                "Idempotency-Key",
                "Idempotency-Key must be a quoted string of 1–\(maxKeyBytes) visible ASCII characters, e.g. "
                    + "\"8e03978e-40d5-43e8-bc93-6894a57f9324\" (\(why)); got \(Routes.clip(raw))"
            )
        }
        var key: [UInt8] = []
        if value.first == UInt8(ascii: "\"") {
            // RFC 9651 sf-string: printable ASCII, with \" and \\ the only escapes, closed by a quote at the end.
            var index = 1
            var closed = false
            while index < value.count {
                let byte = value[index]
                if byte == UInt8(ascii: "\\") {
                    guard index + 1 < value.count,
                        value[index + 1] == UInt8(ascii: "\"") || value[index + 1] == UInt8(ascii: "\\")
                    else { throw malformed("a backslash escapes only \" and \\") }
                    key.append(value[index + 1])
                    index += 2
                    continue
                }
                if byte == UInt8(ascii: "\"") {
                    guard index == value.count - 1 else { throw malformed("nothing may follow the closing quote") }
                    closed = true
                    break
                }
                guard byte >= 0x20, byte <= 0x7E else { throw malformed("only visible ASCII and spaces") }
                key.append(byte)
                index += 1
            }
            guard closed else { throw malformed("the closing quote is missing") }
        } else {
            guard
                value.allSatisfy({
                    $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\")
                        && $0 != UInt8(ascii: ",")
                })
            else { throw malformed("an unquoted key is visible ASCII without spaces, quotes, backslashes or commas") }
            key = value
        }
        guard !key.isEmpty else { throw malformed("it is empty") }
        guard key.count <= maxKeyBytes else { throw malformed("it is longer than \(maxKeyBytes) characters") }
        return String(decoding: key, as: UTF8.self)
    }

    /// The fingerprint of a publish: the SHA-256 of its body, in hex.
    static func fingerprint(_ body: [UInt8]) -> String {
        SHA256.hex(body)
    }
}

extension Array where Element == UInt8 {
    /// Without leading and trailing spaces and tabs.
    fileprivate func trimmingOWS() -> [UInt8] {
        let isOWS = { (byte: UInt8) in byte == 0x20 || byte == 0x09 }
        guard let start = firstIndex(where: { !isOWS($0) }), let end = lastIndex(where: { !isOWS($0) }) else {
            return []
        }
        return Array(self[start...end])
    }
}
