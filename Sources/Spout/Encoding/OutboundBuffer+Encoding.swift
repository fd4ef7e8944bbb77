import HTTPServer
import Sequences

/// Appending the pieces encoders are made of.
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
