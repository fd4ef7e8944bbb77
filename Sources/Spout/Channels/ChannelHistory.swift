/// The events a channel keeps for clients that resume: the newest ones, bounded by count, bytes and age.
///
/// Events enter in sequence order with consecutive sequences and leave from the oldest end, so the event with
/// sequence `s` sits at offset `s - oldestSequence`: finding where a resuming client picks up is arithmetic,
/// not a search.
///
/// **Thread safety:** value type; the channel keeps it under its lock.
struct ChannelHistory {
    /// The limits; an event that alone exceeds ``Limits/bytes`` is still kept until the next one arrives, so
    /// ``latest`` and a resume just after it work.
    struct Limits: Sendable {
        var events: Int
        var bytes: Int
        /// Nanoseconds an event is kept.
        var ageNanoseconds: UInt64
    }

    let limits: Limits
    /// The events, oldest first, from `head` on (the slots before it are released and reused on compaction).
    private var storage: [ChannelEvent] = []
    private var head = 0
    /// Bytes of the events held.
    private(set) var bytes = 0

    init(limits: Limits) {
        self.limits = limits
    }

    /// Events held.
    var count: Int { storage.count &- head }

    var isEmpty: Bool { count == 0 }

    /// The oldest event held.
    var oldest: ChannelEvent? { isEmpty ? nil : storage[head] }

    /// The newest event held.
    var latest: ChannelEvent? { isEmpty ? nil : storage[storage.count &- 1] }

    /// Appends `event` (its sequence follows the newest's) and drops the oldest past the count and byte limits.
    mutating func append(_ event: ChannelEvent) {
        guard limits.events > 0 else { return }
        storage.append(event)
        bytes &+= event.byteCount
        while count > limits.events || (bytes > limits.bytes && count > 1) {
            dropOldest()
        }
    }

    /// Drops events older than the age limit at `now` (monotonic nanoseconds).
    mutating func expire(now: UInt64) {
        while let oldest, now &- oldest.publishedAt > limits.ageNanoseconds, now > oldest.publishedAt {
            dropOldest()
        }
    }

    /// The events after sequence `sequence`, oldest first, copied out (so that a replay in progress does not
    /// make the next append copy the storage); `nil` when events after it have already been dropped
    /// (`sequence` is older than the history reaches back).
    func events(after sequence: UInt64) -> [ChannelEvent]? {
        guard let oldest else { return [] }
        if sequence &+ 1 < oldest.sequence { return nil }
        let skip = sequence >= oldest.sequence ? Int(clamping: sequence &- oldest.sequence &+ 1) : 0
        let start = head &+ min(skip, count)
        return Array(storage[start...])
    }

    /// Every event held, oldest first.
    var all: [ChannelEvent] { Array(storage[head...]) }

    private mutating func dropOldest() {
        bytes &-= storage[head].byteCount
        head &+= 1
        if head == storage.count {
            storage.removeAll(keepingCapacity: storage.capacity <= 64)
            head = 0
        } else if head >= 64 && head &* 2 >= storage.count {
            storage.removeFirst(head)
            head = 0
        }
    }
}
