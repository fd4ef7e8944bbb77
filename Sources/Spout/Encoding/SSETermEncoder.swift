import HTTPServer
import Sequences

/// Server-sent events: a `retry:` line that joins the first block, `id: <index>` and `data: <value>` per
/// element, `event: end` with `{"reason":…}` at the end, `event: error` with the problem on failure, and
/// `: keep-alive` comment lines while idle (see ``SSEEncoder`` for why none of these ends a block alone).
struct SSETermEncoder: SSEStreamEncoder {
    /// The reconnection delay sent in the `retry:` field, in milliseconds.
    var retryMilliseconds: Int

    init(retryMilliseconds: Int) {
        self.retryMilliseconds = retryMilliseconds
    }

    @inline(__always)
    func append(_ term: Term, to buffer: inout OutboundBuffer) {
        // Values below 10^18 (every natural) are formatted from a machine word: past this point the term
        // is not touched, so a term borrowed from a batch needs no retain around the buffer's growth.
        if let small = term.value.smallValue {
            appendEvent(index: term.index, value: small, to: &buffer)
            return
        }
        // The value is a decimal number, so it can never contain a line break: no splitting needed.
        // One reservation per event, then plain stores: "id: " index "\ndata: " value "\n\n".
        let valueDigits = term.value.decimalDigitCount
        _ = buffer.withUnsafeWritableBytes(minimumCapacity: valueDigits &+ 33) { space in
            let start = space.baseAddress!
            start.storeBytes(of: 0x203A_6469, as: UInt32.self)  // "id: "
            var offset = 4 &+ BigUInt.writeDecimal(UInt64(truncatingIfNeeded: term.index), to: start + 4)
            (start + offset).storeBytes(of: 0x3A61_7461_640A, as: UInt64.self)  // "\ndata:" + 2 bytes overwritten
            (start + (offset &+ 6)).storeBytes(of: 0x20, as: UInt8.self)  // " "
            offset &+= 7
            offset &+= term.value.writeDecimal(
                into: UnsafeMutableRawBufferPointer(start: start + offset, count: space.count &- offset)
            )
            (start + offset).storeBytes(of: 0x0A0A, as: UInt16.self)  // "\n\n"
            return offset &+ 2
        }
    }

    /// Appends the terms in runs: the terms below 10^18 of a run share one reservation of the buffer
    /// instead of one each, so the per-event cost is the formatting alone.
    @inline(__always)
    func append(contentsOf terms: UnsafeBufferPointer<Term>, to buffer: inout OutboundBuffer) {
        var next = 0
        while next < terms.count {
            // Runs of at most 16 events: a reservation of 16 * 53 bytes overshoots the buffer's need by
            // little more than one event's worth would.
            let runEnd = min(terms.count, next &+ 16)
            _ = buffer.withUnsafeWritableBytes(minimumCapacity: (runEnd &- next) &* Self.maximumSmallEventBytes) {
                space in
                let start = space.baseAddress!
                var offset = 0
                while next < runEnd, let small = terms[next].value.smallValue {
                    offset &+= Self.writeEvent(index: terms[next].index, value: small, to: start + offset)
                    next &+= 1
                }
                return offset
            }
            // A value of 10^18 or more, if that is what stopped the run.
            if next < runEnd {
                append(terms[next], to: &buffer)
                next &+= 1
            }
        }
    }

    /// The longest event ``writeEvent(index:value:to:)`` writes: 4 + 20 + 7 + 20 + 2 bytes.
    static var maximumSmallEventBytes: Int { 53 }

    /// ``append(_:to:)`` for a value that fits a machine word.
    @inline(__always)
    func appendEvent(index: Int, value: UInt64, to buffer: inout OutboundBuffer) {
        _ = buffer.withUnsafeWritableBytes(minimumCapacity: Self.maximumSmallEventBytes) { space in
            Self.writeEvent(index: index, value: value, to: space.baseAddress!)
        }
    }

    /// Writes the event for a value that fits a machine word at `start`, which has room for
    /// ``maximumSmallEventBytes``; returns the bytes written.
    @inline(__always)
    static func writeEvent(index: Int, value: UInt64, to start: UnsafeMutableRawPointer) -> Int {
        start.storeBytes(of: 0x203A_6469, as: UInt32.self)  // "id: "
        var offset = 4 &+ BigUInt.writeDecimal(UInt64(truncatingIfNeeded: index), to: start + 4)
        (start + offset).storeBytes(of: 0x3A61_7461_640A, as: UInt64.self)  // "\ndata:" + 2 bytes overwritten
        (start + (offset &+ 6)).storeBytes(of: 0x20, as: UInt8.self)  // " "
        offset &+= 7
        offset &+= BigUInt.writeDecimal(value, to: start + offset)
        (start + offset).storeBytes(of: 0x0A0A, as: UInt16.self)  // "\n\n"
        return offset &+ 2
    }

    /// `event: end` with the reason as JSON data.
    static func endFrame(_ reason: StreamEnd) -> [UInt8] {
        var bytes: [UInt8] = []
        SSEEncoder.appendEvent(event: "end", data: #"{"reason":"\#(reason.rawValue)"}"#, to: &bytes)
        return bytes
    }

    /// `event: error` with the problem as JSON data.
    static func failureFrame(_ problem: Problem) -> [UInt8] {
        var bytes: [UInt8] = []
        SSEEncoder.appendEvent(event: "error", data: String(decoding: problem.jsonBytes, as: UTF8.self), to: &bytes)
        return bytes
    }

    /// `: keep-alive`, one comment line.
    static let heartbeat: [UInt8] = {
        var bytes: [UInt8] = []
        SSEEncoder.appendComment("keep-alive", to: &bytes)
        return bytes
    }()
}
