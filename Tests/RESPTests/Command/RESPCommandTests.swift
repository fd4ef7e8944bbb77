import RESP
import Testing

@Suite struct RESPCommandTests {
    @Test func encodesAnArrayOfBulkStrings() {
        let command = RESPCommand("SET", "key", "value")
        #expect(command.encoded == "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n".bytes)
        #expect(command.encodedByteCount == command.encoded.count)
        #expect(command.count == 3)
    }

    @Test func argumentsAreBinarySafeAndNumbersAreDecimal() {
        var command = RESPCommand("XADD", arguments: ["s", "*"])
        command.append([0x00, 0x0D, 0x0A, 0xFF])
        command.append(-42)
        command.append(Int.max)
        command.append("")
        command.append("caf\u{e9}")
        #expect(
            command.encoded
                == "*8\r\n$4\r\nXADD\r\n$1\r\ns\r\n$1\r\n*\r\n$4\r\n".bytes + [0x00, 0x0D, 0x0A, 0xFF]
                + "\r\n$3\r\n-42\r\n$19\r\n9223372036854775807\r\n$0\r\n\r\n$5\r\ncaf\u{e9}\r\n".bytes
        )
        #expect(
            command.arguments
                == [
                    "XADD".bytes, "s".bytes, "*".bytes, [0x00, 0x0D, 0x0A, 0xFF], "-42".bytes,
                    "9223372036854775807".bytes, [], "caf\u{e9}".bytes,
                ]
        )
    }

    @Test func writesAppendToTheCallersBuffer() {
        var buffer = "prefix".bytes
        RESPCommand("PING").write(into: &buffer)
        RESPCommand("ECHO", "a").write(into: &buffer)
        #expect(buffer == "prefix*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$1\r\na\r\n".bytes)
    }

    @Test func theEncodingIsWhatAParserReadsBackAsAnArray() throws {
        var command = RESPCommand("HSET", "h")
        for index in 0..<500 {
            command.append("field\(index)")
            command.append(index)
        }
        var parser = RESPParser()
        parser.append(command.encoded)
        let value = try #require(try parser.next())
        #expect(value == .array(command.arguments.map { .bulkString($0) }))
        #expect(command.count == 1002)
    }

    @Test func nameAndDescription() {
        var command = RESPCommand("xadd", "s", "*")
        command.append([0x01])
        #expect(command.name == "XADD")
        #expect(command.description == "xadd s * \\x01")
    }

    @Test func decimalsCoverTheWholeRange() {
        for number in [0, 9, 10, 99, 100, -1, -9, -10, 1_234_567_890, Int.min, Int.max] {
            var command = RESPCommand("N")
            command.append(number)
            #expect(command.arguments.last == String(number).bytes)
        }
        #expect(RESPValue.integer(.min).encoded == ":-9223372036854775808\r\n".bytes)
    }
}
