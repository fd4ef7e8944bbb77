import HTTPServer
import Sequences

/// Turns the elements of one stream into body bytes: the framing of one format.
///
/// The demand bridge calls it on the connection's loop, writing straight into the outbound buffer.
///
/// **Thread safety:** value type; used on one loop at a time.
public protocol StreamEncoder: Sendable {
    /// The kind of element encoded.
    associatedtype Element

    /// Bytes written once, before the first element (SSE: the `retry:` field).
    func appendPrologue(to buffer: inout OutboundBuffer)

    /// Appends one element.
    func append(_ element: Element, to buffer: inout OutboundBuffer)

    /// Appends several elements in order, as calls to ``append(_:to:)`` would.
    func append(contentsOf elements: UnsafeBufferPointer<Element>, to buffer: inout OutboundBuffer)

    /// Appends the final frame for a stream that ended without failing.
    func appendEnd(_ reason: StreamEnd, to buffer: inout OutboundBuffer)

    /// Appends the frame for a stream whose producer failed.
    func appendFailure(_ problem: Problem, to buffer: inout OutboundBuffer)

    /// Appends a keep-alive that clients ignore, or nothing if the format has none.
    func appendHeartbeat(to buffer: inout OutboundBuffer)
}

extension StreamEncoder {
    @inline(__always)
    public func append(contentsOf elements: UnsafeBufferPointer<Element>, to buffer: inout OutboundBuffer) {
        // Indexing borrows each element in place; `for element in elements` would copy (retain) each one.
        for index in elements.indices { append(elements[index], to: &buffer) }
    }
}

extension OutboundBuffer {
    /// Appends a small byte array (the rare frames: prologue, end, heartbeat).
    mutating func append(bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// Appends the bytes of a literal.
    @inline(__always)
    mutating func append(literal: StaticString) {
        append(UnsafeRawBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    /// Appends `value` in decimal, writing in place with no intermediate array.
    @inline(__always)
    mutating func appendDecimal(_ value: BigUInt) {
        let digits = value.decimalDigitCount
        _ = withUnsafeWritableBytes(minimumCapacity: digits) { space in
            value.writeDecimal(into: space)
        }
    }
}

/// Server-sent events: `id: <index>` and `data: <value>` per element, `event: end` at the end.
public struct SSETermEncoder: StreamEncoder {
    /// The reconnection delay sent in the `retry:` field, in milliseconds.
    public var retryMilliseconds: Int

    public init(retryMilliseconds: Int) {
        self.retryMilliseconds = retryMilliseconds
    }

    public func appendPrologue(to buffer: inout OutboundBuffer) {
        var bytes: [UInt8] = []
        SSEEncoder.appendRetry(milliseconds: retryMilliseconds, to: &bytes)
        buffer.append(bytes: bytes)
    }

    @inline(__always)
    public func append(_ term: Term, to buffer: inout OutboundBuffer) {
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
    public func append(contentsOf terms: UnsafeBufferPointer<Term>, to buffer: inout OutboundBuffer) {
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

    public func appendEnd(_ reason: StreamEnd, to buffer: inout OutboundBuffer) {
        buffer.append(bytes: SSETermEncoder.endFrame(reason))
    }

    public func appendFailure(_ problem: Problem, to buffer: inout OutboundBuffer) {
        buffer.append(bytes: SSETermEncoder.failureFrame(problem))
    }

    public func appendHeartbeat(to buffer: inout OutboundBuffer) {
        buffer.append(bytes: SSETermEncoder.heartbeat)
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

    static let heartbeat: [UInt8] = Array(": keep-alive\n\n".utf8)
}

/// Newline-delimited JSON: `{"index":5,"value":"5"}` per line; a failure is a last `{"error":…}` line.
public struct NDJSONTermEncoder: StreamEncoder {
    public init() {}

    public func appendPrologue(to buffer: inout OutboundBuffer) {}

    @inline(__always)
    public func append(_ term: Term, to buffer: inout OutboundBuffer) {
        buffer.append(literal: "{\"index\":")
        _ = buffer.withUnsafeWritableBytes(minimumCapacity: 20) { space in
            BigUInt.writeDecimal(UInt64(truncatingIfNeeded: term.index), to: space.baseAddress!)
        }
        buffer.append(literal: ",\"value\":\"")
        buffer.appendDecimal(term.value)
        buffer.append(literal: "\"}\n")
    }

    /// The end of an NDJSON stream is the end of the body; no marker line is added.
    public func appendEnd(_ reason: StreamEnd, to buffer: inout OutboundBuffer) {}

    public func appendFailure(_ problem: Problem, to buffer: inout OutboundBuffer) {
        buffer.append(bytes: NDJSONTermEncoder.failureLine(problem))
    }

    /// NDJSON has no comment syntax and blank lines trip strict parsers, so no heartbeat is sent.
    public func appendHeartbeat(to buffer: inout OutboundBuffer) {}

    /// `{"error":{…problem…}}` and a newline.
    static func failureLine(_ problem: Problem) -> [UInt8] {
        var object = JSONObjectWriter()
        object.addRaw("error", json: problem.jsonBytes)
        var bytes = object.finish()
        bytes.append(0x0A)
        return bytes
    }
}
