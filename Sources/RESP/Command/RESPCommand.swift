/// A Redis command ready for the wire: an array of bulk strings, kept encoded as it is built.
///
/// Each argument is encoded once, when it is appended; ``write(into:)`` then copies the array header and those bytes
/// into the connection's buffer. Arguments are binary-safe.
///
///     var command = RESPCommand("XADD", "events", "MAXLEN", "~", "1000", "*")
///     command.append("data")
///     command.append(payloadBytes)
///     command.write(into: &outbound)
///
/// **Ownership:** A value; the connection state machine keeps it until it is written.
/// **Thread safety:** Value type; not shared.
public struct RESPCommand: Sendable, Hashable, CustomStringConvertible {
    /// The arguments, each as `$<length>\r\n<bytes>\r\n`.
    private var encodedArguments: [UInt8] = []
    /// How many arguments there are.
    public private(set) var count = 0

    /// A command with its name and string arguments, e.g. `RESPCommand("SET", "key", "value")`.
    public init(_ name: String, _ arguments: String...) {
        var capacity = name.utf8.count &+ 8
        for argument in arguments {
            capacity &+= argument.utf8.count &+ 8
        }
        encodedArguments.reserveCapacity(capacity)
        append(name)
        for argument in arguments {
            append(argument)
        }
    }

    /// A command with its name and a list of string arguments.
    public init(_ name: String, arguments: some Sequence<String>) {
        append(name)
        for argument in arguments {
            append(argument)
        }
    }

    /// Appends the UTF-8 bytes of `argument`.
    public mutating func append(_ argument: String) {
        append(argument.utf8)
    }

    /// Appends `argument` as it is.
    public mutating func append(_ argument: some Collection<UInt8>) {
        RESPWire.bulk(UInt8(ascii: "$"), argument, into: &encodedArguments)
        count &+= 1
    }

    /// Appends the decimal text of `number`.
    public mutating func append(_ number: Int) {
        // The digits go straight into the buffer; only their count is needed first.
        var count = number < 0 ? 2 : 1
        var rest = number.magnitude
        while rest >= 10 {
            rest /= 10
            count &+= 1
        }
        encodedArguments.append(UInt8(ascii: "$"))
        RESPWire.decimal(Int64(count), into: &encodedArguments)
        RESPWire.crlf(into: &encodedArguments)
        RESPWire.decimal(Int64(number), into: &encodedArguments)
        RESPWire.crlf(into: &encodedArguments)
        self.count &+= 1
    }

    /// The number of bytes ``write(into:)`` appends.
    public var encodedByteCount: Int {
        var header: [UInt8] = []
        RESPWire.decimal(Int64(count), into: &header)
        return 3 &+ header.count &+ encodedArguments.count
    }

    /// Appends the command's wire form, `*<count>\r\n` and the arguments, to `buffer`.
    ///
    /// - Complexity: O(n) in ``encodedByteCount``.
    public func write(into buffer: inout [UInt8]) {
        buffer.append(UInt8(ascii: "*"))
        RESPWire.decimal(Int64(count), into: &buffer)
        RESPWire.crlf(into: &buffer)
        buffer.append(contentsOf: encodedArguments)
    }

    /// The command's wire form.
    public var encoded: [UInt8] {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(encodedByteCount)
        write(into: &buffer)
        return buffer
    }

    /// The arguments, decoded from their wire form.
    public var arguments: [[UInt8]] {
        var result: [[UInt8]] = []
        forEachArgument { result.append(Array($0)) }
        return result
    }

    /// The command name, upper-cased: `"SUBSCRIBE"`, `"XADD"`.
    public var name: String {
        var name = ""
        forEachArgument { argument in
            guard name.isEmpty else { return }
            name = String(decoding: argument, as: UTF8.self).uppercased()
        }
        return name
    }

    /// `SET key value` with every argument escaped (see ``RESPValue/description``).
    public var description: String {
        arguments.map { RESPText.escaped($0, limit: 256) }.joined(separator: " ")
    }

    /// The first argument (the command name as written), or empty for a command without arguments.
    var firstArgument: ArraySlice<UInt8> {
        guard !encodedArguments.isEmpty else { return [] }
        // Written by `append`: `$`, digits, CRLF, then the bytes.
        var index = 1
        var length = 0
        while encodedArguments[index] != RESPWire.cr {
            length = length &* 10 &+ Int(encodedArguments[index] &- 0x30)
            index &+= 1
        }
        index &+= 2
        return encodedArguments[index..<(index &+ length)]
    }

    /// Calls `body` with each argument's bytes, in order.
    func forEachArgument(_ body: (ArraySlice<UInt8>) -> Void) {
        // The bytes were written by `append`, so each header is `$`, digits, CRLF.
        var index = 0
        let bytes = encodedArguments
        while index < bytes.count {
            index &+= 1
            var length = 0
            while bytes[index] != RESPWire.cr {
                length = length &* 10 &+ Int(bytes[index] &- 0x30)
                index &+= 1
            }
            index &+= 2
            body(bytes[index..<(index &+ length)])
            index &+= length &+ 2
        }
    }
}
