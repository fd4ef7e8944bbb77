import Dispatch

/// One serial `DispatchQueue` that owns a share of the server's connections.
///
/// Every connection is pinned to one loop; its sockets' Dispatch sources fire on the loop's queue, and
/// all of its state is touched only there. Work arriving from another thread (a URLSession callback,
/// a timer on another queue) hops on with ``execute(_:)``. The loop also keeps the per-loop resources
/// connections borrow instead of owning: the read buffer, a spare outbound storage, the `Date` cache.
///
/// **Ownership:** Created and retained by an ``EventLoopGroup``; connections, responders and body
/// writers keep a strong reference to their loop.
///
/// **Thread safety:** ``execute(_:)``, ``queue`` and ``inEventLoop`` are safe to call from any thread;
/// the resources are confined to ``queue``.
public final class EventLoop: @unchecked Sendable {  // Mutable state below is confined to `queue`.
    /// The serial queue all of this loop's work runs on. // Immutable.
    public let queue: DispatchQueue

    /// Bytes of the shared read buffer.
    package static let readBufferBytes = 64 * 1024
    /// Spare outbound storage larger than this is freed rather than kept.
    package static let maximumSpareBytes = 1024 * 1024

    private let key: DispatchSpecificKey<ObjectIdentifier>  // Immutable.
    /// The one read buffer every connection on this loop reads into. // Loop-confined.
    package let readBuffer: UnsafeMutableRawBufferPointer
    /// Outbound storage a drained connection handed back, for the next one that needs some. // Loop-confined.
    private var spareStorage: UnsafeMutableRawBufferPointer?
    /// The cached `Date` header line. // Loop-confined.
    package var dateCache = DateCache()

    /// Creates a loop on a new serial queue labelled `label`.
    public init(label: String) {
        queue = DispatchQueue(label: label)
        key = DispatchSpecificKey()
        readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: EventLoop.readBufferBytes, alignment: 16)
        queue.setSpecific(key: key, value: ObjectIdentifier(self))
    }

    deinit {
        readBuffer.deallocate()
        spareStorage?.deallocate()
    }

    /// Whether the caller is running on this loop's queue.
    public var inEventLoop: Bool {
        DispatchQueue.getSpecific(key: key) == ObjectIdentifier(self)
    }

    /// Runs `work` on this loop's queue, later (never inline, even when called on the loop).
    public func execute(_ work: @escaping @Sendable () -> Void) {
        queue.async(execute: work)
    }

    /// Traps unless called on this loop's queue.
    @inline(__always)
    public func preconditionInEventLoop() {
        dispatchPrecondition(condition: .onQueue(queue))
    }

    // MARK: Spare outbound storage (loop-confined)

    /// Gives a buffer with no storage the loop's spare, if there is one.
    @inline(__always)
    package func lendSpareStorage(to buffer: inout OutboundBuffer) {
        if let spare = spareStorage, buffer.storageCapacity == 0 {
            spareStorage = nil
            buffer.adopt(spare)
        }
    }

    /// Takes back storage a connection no longer needs: kept as the spare if the slot is free and the
    /// storage is not too large, freed otherwise.
    @inline(__always)
    package func reclaim(_ storage: UnsafeMutableRawBufferPointer) {
        if spareStorage == nil && storage.count <= EventLoop.maximumSpareBytes {
            spareStorage = storage
        } else if let spare = spareStorage, spare.count < storage.count, storage.count <= EventLoop.maximumSpareBytes {
            spare.deallocate()
            spareStorage = storage
        } else {
            storage.deallocate()
        }
    }

    /// The current wall-clock second, for the `Date` header.
    @inline(__always)
    package func appendDateLine(to buffer: inout OutboundBuffer) {
        dateCache.appendLine(to: &buffer, now: SystemEnvironment.wallClockSeconds())
    }
}

/// A fixed set of ``EventLoop``s, by default one per processor core; connections are spread round-robin.
///
/// **Ownership:** Retained by whoever creates it (a ``Server`` creates its own when given none); the
/// loops live as long as the group.
///
/// **Thread safety:** Immutable; safe to use from any thread.
public final class EventLoopGroup: Sendable {
    /// The loops, in a fixed order. // Immutable.
    public let loops: [EventLoop]

    /// Creates `loopCount` loops (default: one per online processor).
    public init(loopCount: Int = EventLoopGroup.defaultLoopCount) {
        let count = max(1, loopCount)
        loops = (0..<count).map { EventLoop(label: "spout.loop.\($0)") }
    }

    /// One loop per online processor.
    public static var defaultLoopCount: Int { SystemEnvironment.processorCount }
}
