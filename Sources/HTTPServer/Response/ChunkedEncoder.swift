/// Frames a streamed body as HTTP/1.1 chunks (RFC 9112 §7.1), one chunk per flush.
///
/// Body bytes go straight into the ``OutboundBuffer`` behind a reserved header gap; ``closeChunk(in:)``
/// (called at flush time) fills the gap with the chunk size and appends the CRLF, so any number of small
/// writes between two flushes become a single chunk. When the chunk is the first thing in the buffer the
/// header is written right-aligned and the unused part of the gap is skipped; otherwise the size is
/// zero-padded (`1*HEXDIG` allows leading zeros) so the bytes before it need not move.
///
/// **Ownership:** Owned by the connection for the duration of one chunked response.
///
/// **Thread safety:** Value type; not shared.
struct ChunkedEncoder {
    /// Whether a chunk is open, and where its reserved header starts (offset from the buffer's front).
    private enum State {
        /// No chunk open: the next body byte opens one. Next: `open`.
        case idle
        /// Body bytes after `headerOffset + ChunkedEncoder.reservedHeaderBytes` belong to the open chunk.
        /// Next: `idle` (closed at flush).
        case open(headerOffset: Int)
    }

    /// 16 hex digits (any 64-bit size) plus CRLF.
    static let reservedHeaderBytes = 18

    private var state: State = .idle

    /// Whether a chunk is open (body bytes were appended since the last flush).
    var hasOpenChunk: Bool {
        if case .open = state { return true }
        return false
    }

    /// Opens a chunk (reserving its header) unless one is open already. Call before appending body bytes.
    @inline(__always)
    mutating func openChunkIfNeeded(in buffer: inout OutboundBuffer) {
        guard case .idle = state else { return }
        state = .open(headerOffset: buffer.count)
        _ = buffer.withUnsafeWritableBytes(minimumCapacity: ChunkedEncoder.reservedHeaderBytes) { _ in
            ChunkedEncoder.reservedHeaderBytes
        }
    }

    /// Closes the open chunk: writes its size into the gap and appends CRLF. An empty chunk is removed,
    /// since a zero-size chunk would end the body.
    mutating func closeChunk(in buffer: inout OutboundBuffer) {
        guard case .open(let headerOffset) = state else { return }
        state = .idle
        let bodyStart = headerOffset &+ ChunkedEncoder.reservedHeaderBytes
        let length = buffer.count &- bodyStart
        if length == 0 {
            buffer.removeLast(ChunkedEncoder.reservedHeaderBytes)
            return
        }
        var header: (UInt64, UInt64, UInt64) = (0, 0, 0)
        withUnsafeMutableBytes(of: &header) { scratch in
            let digits = ChunkedEncoder.hexDigitCount(UInt64(length))
            let width = headerOffset == 0 ? digits : 16
            ChunkedEncoder.writeHex(UInt64(length), width: width, into: scratch)
            scratch[width] = 0x0D
            scratch[width &+ 1] = 0x0A
            let headerLength = width &+ 2
            let start = bodyStart &- headerLength
            buffer.overwrite(at: start, with: UnsafeRawBufferPointer(rebasing: scratch[0..<headerLength]))
            if headerOffset == 0 && start > 0 { buffer.consume(start) }  // skip the unused part of the gap
        }
        buffer.append(ChunkedEncoder.crlf)
    }

    /// Closes the open chunk and appends the last chunk (`0\r\n\r\n`), ending the body.
    mutating func finish(in buffer: inout OutboundBuffer) {
        closeChunk(in: &buffer)
        buffer.append(ChunkedEncoder.lastChunk)
    }

    /// Forgets an open chunk without framing it (the body was discarded, e.g. for `HEAD`).
    mutating func reset() {
        state = .idle
    }

    private static let crlf: StaticString = "\r\n"
    private static let lastChunk: StaticString = "0\r\n\r\n"

    static func hexDigitCount(_ value: UInt64) -> Int {
        value == 0 ? 1 : (64 &- value.leadingZeroBitCount &+ 3) / 4
    }

    static func writeHex(_ value: UInt64, width: Int, into scratch: UnsafeMutableRawBufferPointer) {
        var remaining = value
        var index = width
        while index > 0 {
            index &-= 1
            let nibble = UInt8(truncatingIfNeeded: remaining & 0xF)
            scratch[index] = nibble < 10 ? nibble &+ 0x30 : nibble &+ 0x57
            remaining >>= 4
        }
    }
}

extension OutboundBuffer {
    /// Appends the bytes of a static string.
    @inline(__always)
    package mutating func append(_ string: StaticString) {
        append(UnsafeRawBufferPointer(start: string.utf8Start, count: string.utf8CodeUnitCount))
    }
}
