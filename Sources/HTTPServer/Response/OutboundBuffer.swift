/// A contiguous, growable queue of bytes waiting to be sent on one connection.
///
/// Appends go to the end; the connection sends from the front and ``consume(_:)``s what the kernel
/// took. Storage is allocated lazily and handed back (to the loop's spare slot or the allocator) when
/// the buffer drains, so an idle or slow connection holds no more than the bytes it still owes.
///
/// **Ownership:** Owned by one ``Connection``; the fast append path lends it to the caller of
/// ``BodyWriter/withAppendBuffer(_:)`` for the duration of the closure.
///
/// **Thread safety:** Value type; not shared. Confined to its connection's loop queue.
///
/// - Complexity: Appends are amortised O(n) in the appended bytes; ``consume(_:)`` is O(1).
public struct OutboundBuffer: ~Copyable {
    private var base: UnsafeMutableRawPointer?
    private var capacity: Int
    private var readIndex: Int
    private var writeIndex: Int

    /// The smallest allocation made when the buffer first needs storage, in bytes.
    package static let minimumAllocation = 1024
    /// Past this size the buffer grows by this many bytes at a time instead of doubling.
    package static let largeGrowthStep = 64 * 1024

    /// Creates an empty buffer with no storage.
    package init() {
        base = nil
        capacity = 0
        readIndex = 0
        writeIndex = 0
    }

    deinit {
        base?.deallocate()
    }

    /// The number of bytes queued.
    public var count: Int { writeIndex - readIndex }

    /// Whether no bytes are queued.
    public var isEmpty: Bool { writeIndex == readIndex }

    /// The bytes of allocated storage (0 when the buffer holds none).
    package var storageCapacity: Int { capacity }

    // MARK: Appending

    /// Appends raw bytes.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        reserveTail(bytes.count)
        (base! + writeIndex).copyMemory(from: source, byteCount: bytes.count)
        writeIndex &+= bytes.count
    }

    /// Appends one byte.
    @inline(__always)
    public mutating func append(_ byte: UInt8) {
        reserveTail(1)
        base!.storeBytes(of: byte, toByteOffset: writeIndex, as: UInt8.self)
        writeIndex &+= 1
    }

    /// Appends a collection of bytes, copying contiguous storage in one go when it has some.
    @inline(__always)
    public mutating func append<Bytes: Collection<UInt8>>(contentsOf bytes: Bytes) {
        let copied: Void? = bytes.withContiguousStorageIfAvailable { append(UnsafeRawBufferPointer($0)) }
        if copied == nil {
            reserveTail(bytes.count)
            for byte in bytes { append(byte) }
        }
    }

    /// Appends the UTF-8 bytes of `string`.
    @inline(__always)
    public mutating func append(_ string: String) {
        var string = string
        string.withUTF8 { append(UnsafeRawBufferPointer($0)) }
    }

    /// Appends `value` as ASCII decimal digits, without going through `String`.
    public mutating func appendDecimal(_ value: UInt64) {
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: room for 20 digits.
        var remaining = value
        var length = 0
        withUnsafeMutableBytes(of: &digits) { scratch in
            repeat {
                length &+= 1
                scratch[24 &- length] = UInt8(truncatingIfNeeded: remaining % 10) &+ 0x30
                remaining /= 10
            } while remaining != 0
            append(UnsafeRawBufferPointer(rebasing: scratch[(24 &- length)...]))
        }
    }

    /// Appends `value` as ASCII decimal digits, with a leading `-` when negative.
    public mutating func appendDecimal(_ value: Int) {
        if value < 0 { append(UInt8(ascii: "-")) }
        appendDecimal(value.magnitude.toUInt64)
    }

    /// Lends the caller writable space at the end of the buffer, for formatting in place.
    ///
    /// - Parameters:
    ///   - minimumCapacity: The bytes of space the closure needs, at least.
    ///   - body: Writes into the space and returns how many bytes it wrote (at most the space's count).
    /// - Returns: What `body` returned.
    public mutating func withUnsafeWritableBytes<E: Error>(
        minimumCapacity: Int,
        _ body: (UnsafeMutableRawBufferPointer) throws(E) -> Int
    ) throws(E) -> Int {
        reserveTail(Swift.max(minimumCapacity, 0))
        let space = UnsafeMutableRawBufferPointer(start: base! + writeIndex, count: capacity &- writeIndex)
        let written = try body(space)
        precondition(written >= 0 && written <= space.count, "API violation: wrote \(written) of \(space.count) bytes")
        writeIndex &+= written
        return written
    }

    // MARK: Connection side

    /// The queued bytes, front first. Valid until the next mutation.
    package var readableBytes: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: base.map { $0 + readIndex }, count: count)
    }

    /// Drops `byteCount` bytes from the front (the kernel took them).
    package mutating func consume(_ byteCount: Int) {
        precondition(byteCount >= 0 && byteCount <= count, "internal inconsistency: consume \(byteCount) of \(count)")
        readIndex &+= byteCount
        if readIndex == writeIndex {
            readIndex = 0
            writeIndex = 0
        }
    }

    /// Drops the last `byteCount` bytes (an unused reservation).
    package mutating func removeLast(_ byteCount: Int) {
        precondition(
            byteCount >= 0 && byteCount <= count,
            "internal inconsistency: removeLast \(byteCount) of \(count)"
        )
        writeIndex &-= byteCount
    }

    /// Overwrites bytes already in the buffer, at `offset` from the front.
    package mutating func overwrite(at offset: Int, with bytes: UnsafeRawBufferPointer) {
        precondition(offset >= 0 && offset &+ bytes.count <= count, "internal inconsistency: overwrite out of range")
        guard let source = bytes.baseAddress else { return }
        (base! + (readIndex &+ offset)).copyMemory(from: source, byteCount: bytes.count)
    }

    /// Takes the storage out of an empty buffer, leaving it with none.
    /// - Returns: The storage, or `nil` when the buffer had none or still holds bytes.
    package mutating func takeStorageIfEmpty() -> UnsafeMutableRawBufferPointer? {
        guard isEmpty, let storage = base else { return nil }
        let taken = UnsafeMutableRawBufferPointer(start: storage, count: capacity)
        base = nil
        capacity = 0
        readIndex = 0
        writeIndex = 0
        return taken
    }

    /// Gives an empty buffer that has no storage the given storage (e.g. the loop's spare).
    package mutating func adopt(_ storage: UnsafeMutableRawBufferPointer) {
        precondition(base == nil, "internal inconsistency: adopt into a buffer with storage")
        base = storage.baseAddress
        capacity = storage.count
        readIndex = 0
        writeIndex = 0
    }

    /// Moves the queued bytes into a right-sized allocation (their count rounded up to 64, at least
    /// ``minimumAllocation``) when the current one is far larger.
    /// - Parameters:
    ///   - slackFactor: The current storage is kept while it is at most this many times the pending bytes.
    ///   - minimumCapacity: The current storage is kept while it is at most this large.
    /// - Returns: The old storage when it was replaced (the caller keeps or frees it), else `nil`.
    package mutating func shrink(keepingAtMost slackFactor: Int, minimumCapacity: Int) -> UnsafeMutableRawBufferPointer?
    {
        let pending = count
        guard let old = base,
            capacity > Swift.max(minimumCapacity, pending.multipliedReportingOverflow(by: slackFactor).partialValue)
        else {
            return nil
        }
        let newCapacity = (Swift.max(pending, OutboundBuffer.minimumAllocation) &+ 63) & ~63
        guard newCapacity < capacity else { return nil }
        let fresh = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 16)
        fresh.copyMemory(from: old + readIndex, byteCount: pending)
        let replaced = UnsafeMutableRawBufferPointer(start: old, count: capacity)
        base = fresh
        capacity = newCapacity
        readIndex = 0
        writeIndex = pending
        return replaced
    }

    /// Makes the storage hold `capacity` bytes in one allocation of exactly that size (rounded up to 64),
    /// so that filling it to there needs no chain of doublings (each of which leaves the last allocation
    /// behind, touched, in the heap) and nothing beyond it is allocated. Does nothing if the storage is
    /// already that large or the pending bytes need more.
    package mutating func reserveCapacity(_ capacity: Int) {
        guard capacity > self.capacity, capacity > count, capacity <= Int.max &- 63 else { return }
        reallocate(capacity: (capacity &+ 63) & ~63)
    }

    // MARK: Storage

    /// Makes room for `extra` bytes after `writeIndex`, compacting or growing as needed.
    @inline(__always)
    private mutating func reserveTail(_ extra: Int) {
        if capacity &- writeIndex >= extra { return }
        grow(extra)
    }

    private mutating func grow(_ extra: Int) {
        let pending = count
        let (needed, overflow) = pending.addingReportingOverflow(extra)
        precondition(!overflow, "API violation: outbound buffer size overflows Int")
        if let old = base, capacity >= needed, readIndex > 0 {
            // Enough room once the sent prefix is gone: slide the pending bytes down.
            old.copyMemory(from: old + readIndex, byteCount: pending)
            readIndex = 0
            writeIndex = pending
            return
        }
        // Doubling up to 64 KiB, then 64 KiB steps: a 256 KiB batch plus framing must not become a
        // half-empty 512 KiB allocation.
        var newCapacity = Swift.max(capacity, OutboundBuffer.minimumAllocation)
        while newCapacity < needed {
            let step = Swift.min(newCapacity, OutboundBuffer.largeGrowthStep)
            let (grown, overflow) = newCapacity.addingReportingOverflow(step)
            newCapacity = overflow ? needed : grown
        }
        reallocate(capacity: newCapacity)
    }

    /// Moves the pending bytes into a fresh allocation of `newCapacity` bytes (at least ``count``).
    private mutating func reallocate(capacity newCapacity: Int) {
        let pending = count
        let fresh = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 16)
        if let old = base {
            fresh.copyMemory(from: old + readIndex, byteCount: pending)
            old.deallocate()
        }
        base = fresh
        capacity = newCapacity
        readIndex = 0
        writeIndex = pending
    }
}

extension UInt {
    fileprivate var toUInt64: UInt64 { UInt64(self) }
}
