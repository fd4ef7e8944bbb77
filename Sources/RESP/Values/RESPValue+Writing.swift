extension RESPValue {
    /// Appends this value's wire form to `buffer`, as a server would send it.
    ///
    /// Used to build replies in tests and fakes, and to check the parser against its inverse. Lines (simple
    /// strings, errors, big numbers) are written as given: a CR or LF inside one makes bytes that no parser accepts.
    /// Doubles use their shortest round-trip text (`1.5`, `1e-07`, `inf`, `nan`).
    ///
    /// - Complexity: O(n) in the encoded size; recurses once per nesting level.
    public func write(into buffer: inout [UInt8]) {
        switch self {
        case .simpleString(let text):
            RESPWire.line(UInt8(ascii: "+"), text, into: &buffer)
        case .error(let message):
            RESPWire.line(UInt8(ascii: "-"), message, into: &buffer)
        case .integer(let value):
            buffer.append(UInt8(ascii: ":"))
            RESPWire.decimal(value, into: &buffer)
            RESPWire.crlf(into: &buffer)
        case .bulkString(nil):
            RESPWire.line(UInt8(ascii: "$"), "-1", into: &buffer)
        case .bulkString(let bytes?):
            RESPWire.bulk(UInt8(ascii: "$"), bytes, into: &buffer)
        case .array(nil):
            RESPWire.line(UInt8(ascii: "*"), "-1", into: &buffer)
        case .array(let elements?):
            RESPWire.aggregate(UInt8(ascii: "*"), elements, into: &buffer)
        case .null:
            RESPWire.line(UInt8(ascii: "_"), "", into: &buffer)
        case .boolean(let value):
            RESPWire.line(UInt8(ascii: "#"), value ? "t" : "f", into: &buffer)
        case .double(let value):
            RESPWire.line(UInt8(ascii: ","), value.description, into: &buffer)
        case .bigNumber(let digits):
            RESPWire.line(UInt8(ascii: "("), digits, into: &buffer)
        case .bulkError(let message):
            RESPWire.bulk(UInt8(ascii: "!"), Array(message.utf8), into: &buffer)
        case .verbatimString(let format, let text):
            RESPWire.bulk(UInt8(ascii: "="), Array(format.utf8) + [UInt8(ascii: ":")] + text, into: &buffer)
        case .map(let pairs):
            RESPWire.pairs(UInt8(ascii: "%"), pairs, into: &buffer)
        case .set(let elements):
            RESPWire.aggregate(UInt8(ascii: "~"), elements, into: &buffer)
        case .attribute(let pairs, let value):
            RESPWire.pairs(UInt8(ascii: "|"), pairs, into: &buffer)
            value.write(into: &buffer)
        case .push(let elements):
            RESPWire.aggregate(UInt8(ascii: ">"), elements, into: &buffer)
        }
    }

    /// This value's wire form.
    public var encoded: [UInt8] {
        var buffer: [UInt8] = []
        write(into: &buffer)
        return buffer
    }
}

/// Writers for the pieces of the wire format, shared by ``RESPValue`` and ``RESPCommand``.
enum RESPWire {
    static let cr: UInt8 = 0x0D
    static let lf: UInt8 = 0x0A

    @inline(__always)
    static func crlf(into buffer: inout [UInt8]) {
        buffer.append(cr)
        buffer.append(lf)
    }

    /// `type`, `text`, CRLF.
    static func line(_ type: UInt8, _ text: String, into buffer: inout [UInt8]) {
        buffer.append(type)
        buffer.append(contentsOf: text.utf8)
        crlf(into: &buffer)
    }

    /// `type`, the byte count, CRLF, the bytes, CRLF.
    static func bulk(_ type: UInt8, _ bytes: some Collection<UInt8>, into buffer: inout [UInt8]) {
        buffer.append(type)
        decimal(Int64(bytes.count), into: &buffer)
        crlf(into: &buffer)
        buffer.append(contentsOf: bytes)
        crlf(into: &buffer)
    }

    static func aggregate(_ type: UInt8, _ elements: [RESPValue], into buffer: inout [UInt8]) {
        buffer.append(type)
        decimal(Int64(elements.count), into: &buffer)
        crlf(into: &buffer)
        for element in elements {
            element.write(into: &buffer)
        }
    }

    static func pairs(_ type: UInt8, _ pairs: [RESPValue.Pair], into buffer: inout [UInt8]) {
        buffer.append(type)
        decimal(Int64(pairs.count), into: &buffer)
        crlf(into: &buffer)
        for pair in pairs {
            pair.key.write(into: &buffer)
            pair.value.write(into: &buffer)
        }
    }

    /// Appends the decimal digits of `value` (with a `-` when negative) without building a `String`.
    static func decimal(_ value: Int64, into buffer: inout [UInt8]) {
        if value < 0 {
            buffer.append(UInt8(ascii: "-"))
        }
        // The magnitude as unsigned, so Int64.min has one too.
        var magnitude = value.magnitude
        if magnitude < 10 {
            buffer.append(0x30 &+ UInt8(truncatingIfNeeded: magnitude))
            return
        }
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // room for 20 digits, least significant first
        var count = 0
        withUnsafeMutableBytes(of: &digits) { raw in
            while magnitude > 0 {
                raw[count] = 0x30 &+ UInt8(truncatingIfNeeded: magnitude % 10)
                magnitude /= 10
                count &+= 1
            }
            var index = count
            while index > 0 {
                index &-= 1
                buffer.append(raw[index])
            }
        }
    }
}
