/// Appends JSON text to a byte buffer: strings escaped per RFC 8259, integers in decimal.
///
/// Spout writes its small JSON documents (problems, listings, log lines, NDJSON records) by
/// hand, so key order is stable and no `Foundation` encoder runs per streamed element.
///
/// **Thread safety:** value type; not shared.
enum JSONText {
    /// `values` as a JSON array of strings: `["a","b"]`.
    static func stringArray(_ values: [String]) -> [UInt8] {
        var bytes: [UInt8] = [UInt8(ascii: "[")]
        for (position, value) in values.enumerated() {
            if position > 0 { bytes.append(UInt8(ascii: ",")) }
            appendString(value, to: &bytes)
        }
        bytes.append(UInt8(ascii: "]"))
        return bytes
    }

    /// Appends `value` as a quoted JSON string, escaping quotes, backslashes and control characters.
    static func appendString(_ value: some StringProtocol, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        let written: Void? = value.utf8.withContiguousStorageIfAvailable { buffer in
            appendEscaped(buffer, to: &bytes)
        }
        if written == nil {
            for byte in value.utf8 { appendEscaped(byte, to: &bytes) }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// Appends `buffer` escaped: runs of bytes that need no escape are copied at once.
    private static func appendEscaped(_ buffer: UnsafeBufferPointer<UInt8>, to bytes: inout [UInt8]) {
        var runStart = 0
        var index = 0
        while index < buffer.count {
            let byte = buffer[index]
            if needsEscape(byte) {
                if runStart < index {
                    bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[runStart..<index]))
                }
                appendEscaped(byte, to: &bytes)
                runStart = index + 1
            }
            index += 1
        }
        if runStart < buffer.count { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[runStart...])) }
    }

    /// Whether JSON text escapes `byte`: a control character, `"`, `\` or DEL. (The request log's fast path
    /// asks this too, to know when a value must go the general way.)
    @inline(__always)
    static func needsEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte == 0x7F
    }

    /// Appends one byte, escaped if JSON requires it.
    private static func appendEscaped(_ byte: UInt8, to bytes: inout [UInt8]) {
        switch byte {
        case UInt8(ascii: "\""): bytes.append(contentsOf: [0x5C, 0x22])
        case UInt8(ascii: "\\"): bytes.append(contentsOf: [0x5C, 0x5C])
        case 0x0A: bytes.append(contentsOf: [0x5C, UInt8(ascii: "n")])
        case 0x0D: bytes.append(contentsOf: [0x5C, UInt8(ascii: "r")])
        case 0x09: bytes.append(contentsOf: [0x5C, UInt8(ascii: "t")])
        case 0x00..<0x20, 0x7F:
            bytes.append(contentsOf: Array("\\u00".utf8))
            bytes.append(hexDigit(byte >> 4))
            bytes.append(hexDigit(byte & 0x0F))
        default: bytes.append(byte)
        }
    }

    /// Appends a signed integer in decimal.
    static func appendInteger(_ value: Int, to bytes: inout [UInt8]) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        appendUnsigned(UInt64(value.magnitude), to: &bytes)
    }

    /// Appends an unsigned integer in decimal.
    static func appendUnsigned(_ value: UInt64, to bytes: inout [UInt8]) {
        // Digit by digit from the most significant: no scratch buffer, no slice to copy.
        var divisor: UInt64 = 1
        while divisor <= value / 10 { divisor &*= 10 }
        repeat {
            bytes.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value / divisor % 10))
            divisor /= 10
        } while divisor > 0
    }

    /// Appends a number with up to `fractionDigits` decimals (for durations in logs and metrics).
    static func appendDecimal(_ value: Double, fractionDigits: Int, to bytes: inout [UInt8]) {
        guard value.isFinite else {
            bytes.append(contentsOf: Array("null".utf8))
            return
        }
        var scale = 1.0
        for _ in 0..<max(0, min(fractionDigits, 9)) { scale *= 10 }
        let scaled = (abs(value) * scale).rounded()
        guard scaled < 9.0e18 else {
            bytes.append(contentsOf: Array(String(value).utf8))
            return
        }
        let whole = UInt64(scaled)
        let unit = UInt64(scale)
        if value < 0 && whole > 0 { bytes.append(UInt8(ascii: "-")) }
        appendUnsigned(whole / unit, to: &bytes)
        guard unit > 1 else { return }
        bytes.append(UInt8(ascii: "."))
        var fraction = whole % unit
        var divisor = unit / 10
        while divisor > 0 {
            bytes.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: fraction / divisor))
            fraction %= divisor
            divisor /= 10
        }
    }

    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") &+ nibble : UInt8(ascii: "a") &+ nibble &- 10
    }
}

/// A JSON object written field by field into a byte buffer, in the order the fields are added.
///
/// **Thread safety:** value type; not shared.
struct JSONObjectWriter {
    /// The bytes written so far; ``finish()`` closes the object.
    private(set) var bytes: [UInt8]
    private var isEmpty = true

    /// Starts an object, appending to `bytes`.
    init(appendingTo bytes: [UInt8] = []) {
        self.bytes = bytes
        // Spout's objects are small; one reservation spares the doubling from an empty buffer.
        self.bytes.reserveCapacity(bytes.count + 128)
        self.bytes.append(UInt8(ascii: "{"))
    }

    private mutating func key(_ name: String) {
        if !isEmpty { bytes.append(UInt8(ascii: ",")) }
        isEmpty = false
        JSONText.appendString(name, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
    }

    /// Adds a string field.
    mutating func add(_ name: String, _ value: some StringProtocol) {
        key(name)
        JSONText.appendString(value, to: &bytes)
    }

    /// Adds an integer field.
    mutating func add(_ name: String, _ value: Int) {
        key(name)
        JSONText.appendInteger(value, to: &bytes)
    }

    /// Adds a boolean field.
    mutating func add(_ name: String, _ value: Bool) {
        key(name)
        bytes.append(contentsOf: Array((value ? "true" : "false").utf8))
    }

    /// Adds a number field with up to `fractionDigits` decimals.
    mutating func add(_ name: String, _ value: Double, fractionDigits: Int = 3) {
        key(name)
        JSONText.appendDecimal(value, fractionDigits: fractionDigits, to: &bytes)
    }

    /// Adds a field whose value is already valid JSON text.
    mutating func addRaw(_ name: String, json: some Sequence<UInt8>) {
        key(name)
        bytes.append(contentsOf: json)
    }

    /// Adds a `null` field.
    mutating func addNull(_ name: String) {
        key(name)
        bytes.append(contentsOf: Array("null".utf8))
    }

    /// Closes the object and returns its bytes.
    consuming func finish() -> [UInt8] {
        bytes.append(UInt8(ascii: "}"))
        return bytes
    }
}
