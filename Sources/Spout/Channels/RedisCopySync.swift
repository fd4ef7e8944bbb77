/// Where a replica's copy of a Redis channel is in following Redis (``RedisChannelBroker``), as a machine: each
/// event (a read wanted, a read's reply, an announcement, a subscriber arriving, the sweep) is a mutating method
/// that returns what the broker must do, and the broker does it after its lock. Pure: no connection, no clock, no
/// channel; tested on its own.
///
/// - *unsynced* (new, or its read failed): subscribers wait; the next ``startRead(position:)`` reads everything
///   (or from the copy's position, once it has one);
/// - *syncing* (a read in flight): announcements are held (up to ``heldAnnouncementsLimit`` and
///   ``heldBytesLimit``; past them dropped, and read again after), subscribers wait;
/// - *live*: announcements are applied as they come, subscribers join at once.
///
/// A subscriber whose resume id is of a generation the copy does not know may predate the read in flight: it waits
/// for one more read, started after it (``subscribe(_:stranger:)`` sets *read again*).
///
/// **Thread safety:** value type; the broker keeps it under its lock.
struct RedisCopySync<Announcement, Waiting> {
    enum Phase: Equatable {
        /// Needs a read (new, or the follower was lost); joins wait.
        case unsynced
        /// A read is in flight; announcements are held. `loaded`: the copy had loaded before (a catch-up read).
        case syncing(loaded: Bool)
        /// Applying announcements as they come.
        case live
    }

    /// What the broker does after ``startRead(position:)``.
    enum ReadAction: Equatable {
        /// A read is in flight already, or none is needed.
        case none
        /// Read the events after `after` (nil: from the history's start).
        case read(after: UInt64?)
    }

    /// What the broker does with an announcement (``announced(_:bytes:)``).
    enum AnnouncementAction: Equatable {
        /// Apply it to the copy now.
        case apply
        /// Nothing: it was held for the read's end (or dropped past the limits, to be read again).
        case none
    }

    /// What a read's end hands back (``readCompleted()``).
    struct Completion {
        /// The announcements held during the read, to apply in order.
        var held: [Announcement]
        /// The subscribers to join now (none when they wait for another read).
        var joins: [Waiting]
        /// Read again once the held ones are applied: some were dropped, or joins wait for a read after them.
        var readAgain: Bool
        /// The joins wait for that read (they stay waiting).
        var joinsWait: Bool
    }

    let heldAnnouncementsLimit: Int
    let heldBytesLimit: Int
    private(set) var phase = Phase.unsynced
    private(set) var held: [Announcement] = []
    private(set) var heldBytes = 0
    /// Whether announcements were dropped past the limits while held: read again after the load.
    private(set) var droppedHeld = false
    /// Subscribers waiting for the copy to load.
    private(set) var waiting: [Waiting] = []
    /// A join waits with an id the read under way may predate.
    private(set) var readAgain = false

    init(heldAnnouncementsLimit: Int, heldBytesLimit: Int) {
        self.heldAnnouncementsLimit = heldAnnouncementsLimit
        self.heldBytesLimit = heldBytesLimit
    }

    /// Whether the copy has loaded (live, or catching up after having loaded).
    var isLoaded: Bool {
        switch phase {
        case .live, .syncing(loaded: true): true
        case .unsynced, .syncing(loaded: false): false
        }
    }

    /// Whether the copy needs a read and none is in flight (retried by the sweep).
    var needsRead: Bool { phase == .unsynced }

    /// A read is wanted (new copy, a gap, a reconnect): starts one unless one is in flight. `position` gives the
    /// copy's epoch and last sequence (asked only for a copy that is live).
    mutating func startRead(position: () -> (epoch: String, sequence: UInt64)) -> ReadAction {
        switch phase {
        case .syncing:
            return .none
        case .unsynced:
            phase = .syncing(loaded: false)
            readAgain = false
            return .read(after: nil)
        case .live:
            phase = .syncing(loaded: true)
            readAgain = false
            let position = position()
            return .read(after: position.epoch.isEmpty ? nil : position.sequence)
        }
    }

    /// The read failed (Redis unreachable, an odd reply): unsynced again, the held announcements let go (the next
    /// read covers them).
    mutating func readFailed() {
        phase = .unsynced
        held = []
        heldBytes = 0
    }

    /// The read's piece was applied but the copy must read on (more than one read's worth, or a new generation):
    /// the next ``startRead(position:)`` goes on from the copy's position. Held announcements and waiting joins
    /// stay for that read's end.
    mutating func readContinues() {
        phase = .live
    }

    /// The read ended: the copy is live; hands back the held announcements and the joins (unless they wait for
    /// another read).
    mutating func readCompleted() -> Completion {
        let completion = Completion(
            held: held,
            joins: readAgain ? [] : waiting,
            readAgain: droppedHeld || readAgain,
            joinsWait: readAgain
        )
        held = []
        heldBytes = 0
        droppedHeld = false
        if !readAgain { waiting = [] }
        phase = .live
        return completion
    }

    /// An announcement of `bytes` arrived: applied when live, else held (or dropped past the limits).
    mutating func announced(_ announcement: Announcement, bytes: Int) -> AnnouncementAction {
        guard phase == .live else {
            if held.count < heldAnnouncementsLimit, heldBytes &+ bytes <= heldBytesLimit {
                held.append(announcement)
                heldBytes &+= bytes
            } else {
                droppedHeld = true
            }
            return .none
        }
        return .apply
    }

    /// A subscriber arrives: whether it joins now (the copy is live and its id is not a stranger's); else it
    /// waits, and a stranger's id during a read makes the copy read once more after it.
    mutating func subscribe(_ subscriber: Waiting, stranger: Bool) -> Bool {
        if phase == .live, !stranger { return true }
        waiting.append(subscriber)
        if stranger, case .syncing = phase { readAgain = true }
        return false
    }

    /// Lets go of the waiting subscribers that `gone` says have left (clients that gave up on a copy that cannot
    /// load).
    mutating func removeWaiting(where gone: (Waiting) -> Bool) {
        waiting.removeAll(where: gone)
    }
}
