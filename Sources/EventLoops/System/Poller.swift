import Glibc

// <sys/epoll.h> values (the same on every Linux architecture).
private let EPOLLIN: UInt32 = 0x001
private let EPOLLOUT: UInt32 = 0x004
private let EPOLLERR: UInt32 = 0x008
private let EPOLLHUP: UInt32 = 0x010
private let EPOLLRDHUP: UInt32 = 0x2000
private let EPOLL_CTL_ADD: Int32 = 1
private let EPOLL_CTL_DEL: Int32 = 2
private let EPOLL_CTL_MOD: Int32 = 3
private let EPOLL_CLOEXEC: Int32 = 0o2_000_000

// struct epoll_event { uint32_t events; uint64_t data; } is packed on x86-64 (12 bytes), padded elsewhere.
#if arch(x86_64)
    private let epollEventStride = 12
    private let epollDataOffset = 4
#else
    private let epollEventStride = 16
    private let epollDataOffset = 8
#endif

/// What a registered descriptor is waiting for (``EventLoop/register(_:_:interest:)``,
/// ``EventLoop/updateInterest(_:_:)``). Errors and hang-ups are always reported.
///
/// **Thread safety:** Value type.
public struct PollInterest: Equatable, Sendable {
    /// Bytes to read (or EOF).
    public var readable: Bool
    /// Room in the send buffer.
    public var writable: Bool
    /// The peer shut its sending side (reported even while not reading).
    public var peerHalfClose: Bool

    /// Creates an interest; by default in nothing but errors and hang-ups.
    public init(readable: Bool = false, writable: Bool = false, peerHalfClose: Bool = false) {
        self.readable = readable
        self.writable = writable
        self.peerHalfClose = peerHalfClose
    }

    fileprivate var mask: UInt32 {
        var mask: UInt32 = 0
        if readable { mask |= EPOLLIN }
        if writable { mask |= EPOLLOUT }
        if peerHalfClose { mask |= EPOLLRDHUP }
        return mask
    }
}

/// What `epoll_wait` reported for one descriptor, handed to its ``PollTarget``.
///
/// **Thread safety:** Value type.
public struct PollEvent: Sendable {
    /// The descriptor.
    public var fd: Int32
    /// Readable, or the peer half-closed (a read returns 0).
    public var readable: Bool
    /// Writable.
    public var writable: Bool
    /// The peer shut its side (`EPOLLRDHUP`).
    public var peerHalfClosed: Bool
    /// An error or full hang-up (`EPOLLERR`, `EPOLLHUP`): the connection is gone.
    public var failed: Bool
}

/// A level-triggered `epoll` instance, polled without blocking.
///
/// An ``EventLoop`` keeps one for all of its connections, and its thread (``LoopThread``) waits on the
/// epoll descriptor itself: one wake-up then serves every connection that became ready, instead of one
/// wake-up per socket event.
///
/// **Ownership:** Owned by its ``EventLoop``; closes the epoll descriptor on deinit.
///
/// **Thread safety:** Confined to its loop's queue.
final class Poller {
    /// The epoll descriptor. // Immutable.
    let fd: Int32
    private let events: UnsafeMutableRawBufferPointer  // Loop-confined: `batchSize` epoll_events.

    /// The most events one ``poll(_:)`` call returns.
    static let batchSize = 256

    /// - Throws: ``IOError`` from `epoll_create1`.
    init() throws(IOError) {
        fd = Int32(try Syscall.blocking("epoll_create1") { Int(LinuxSymbols.epollCreate1(EPOLL_CLOEXEC)) })
        events = .allocate(byteCount: Poller.batchSize * epollEventStride, alignment: 8)
    }

    deinit {
        events.deallocate()
        Glibc.close(fd)
    }

    /// Starts watching `descriptor`.
    func add(_ descriptor: Int32, _ interest: PollInterest) throws(IOError) {
        try control(EPOLL_CTL_ADD, descriptor, interest)
    }

    /// Changes what `descriptor` is watched for.
    func modify(_ descriptor: Int32, _ interest: PollInterest) throws(IOError) {
        try control(EPOLL_CTL_MOD, descriptor, interest)
    }

    /// Stops watching `descriptor` (before it is closed).
    func remove(_ descriptor: Int32) {
        var event: (UInt64, UInt64) = (0, 0)
        _ = LinuxSymbols.epollControl(fd, EPOLL_CTL_DEL, descriptor, &event)
    }

    /// Collects ready descriptors without blocking and calls `body` for each.
    /// - Returns: How many were ready (at most ``batchSize``).
    func poll(_ body: (PollEvent) -> Void) -> Int {
        let count: Int
        do {
            switch try Syscall.run(
                "epoll_wait",
                { Int(LinuxSymbols.epollWait(fd, events.baseAddress, Int32(Poller.batchSize), 0)) }
            ) {
            case .processed(let ready):
                count = ready
            case .wouldBlock:
                return 0
            }
        } catch {
            return 0
        }
        let failure = EPOLLERR | EPOLLHUP
        for index in 0..<count {
            let offset = index &* epollEventStride
            let flags = events.loadUnaligned(fromByteOffset: offset, as: UInt32.self)
            let data = events.loadUnaligned(fromByteOffset: offset &+ epollDataOffset, as: UInt64.self)
            body(
                PollEvent(
                    fd: Int32(truncatingIfNeeded: data),
                    readable: flags & EPOLLIN != 0,
                    writable: flags & EPOLLOUT != 0,
                    peerHalfClosed: flags & EPOLLRDHUP != 0,
                    failed: flags & failure != 0
                )
            )
        }
        return count
    }

    private func control(_ operation: Int32, _ descriptor: Int32, _ interest: PollInterest) throws(IOError) {
        var event: (UInt64, UInt64) = (0, 0)
        withUnsafeMutableBytes(of: &event) { bytes in
            bytes.storeBytes(of: interest.mask, toByteOffset: 0, as: UInt32.self)
            bytes.storeBytes(of: UInt64(UInt32(bitPattern: descriptor)), toByteOffset: epollDataOffset, as: UInt64.self)
        }
        try Syscall.blocking("epoll_ctl") { Int(LinuxSymbols.epollControl(fd, operation, descriptor, &event)) }
    }
}
