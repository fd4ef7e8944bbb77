import RESP
import Testing

/// A well-formed input and the value it must give.
struct ValidSample: CustomTestStringConvertible, Sendable {
    var name: String
    var input: [UInt8]
    var value: RESPValue
    /// Whether ``RESPValue/write(into:)`` gives back exactly `input` (false where the wire allows several spellings).
    var isCanonical = true

    var testDescription: String { name }
}

private func sample(_ name: String, _ input: String, _ value: RESPValue, canonical: Bool = true) -> ValidSample {
    ValidSample(name: name, input: input.bytes, value: value, isCanonical: canonical)
}

let validSamples: [ValidSample] = [
    sample("simple string", "+OK\r\n", .simpleString("OK")),
    sample("empty simple string", "+\r\n", .simpleString("")),
    sample("simple string with utf-8", "+caf\u{e9}\r\n", .simpleString("caf\u{e9}")),
    sample("error", "-ERR unknown command 'FOO'\r\n", .error("ERR unknown command 'FOO'")),
    sample("wrongtype error", "-WRONGTYPE Operation against a key\r\n", .error("WRONGTYPE Operation against a key")),
    sample("integer zero", ":0\r\n", .integer(0)),
    sample("negative integer", ":-42\r\n", .integer(-42)),
    sample("integer with plus", ":+7\r\n", .integer(7), canonical: false),
    sample("largest integer", ":9223372036854775807\r\n", .integer(.max)),
    sample("smallest integer", ":-9223372036854775808\r\n", .integer(.min)),
    sample("bulk string", "$5\r\nhello\r\n", .bulkString("hello")),
    sample("empty bulk string", "$0\r\n\r\n", .bulkString([])),
    sample("binary bulk string", "$4\r\n\r\n\u{0}\n\r\n", .bulkString([0x0D, 0x0A, 0x00, 0x0A])),
    sample("null bulk string", "$-1\r\n", .bulkString(nil)),
    sample("array", "*2\r\n$3\r\nfoo\r\n:1\r\n", .array([.bulkString("foo"), .integer(1)])),
    sample("empty array", "*0\r\n", .array([])),
    sample("null array", "*-1\r\n", .array(nil)),
    sample(
        "nested array",
        "*2\r\n*1\r\n+a\r\n*0\r\n",
        .array([.array([.simpleString("a")]), .array([])])
    ),
    sample("array with nulls", "*3\r\n$-1\r\n*-1\r\n_\r\n", .array([.bulkString(nil), .array(nil), .null])),
    sample("null", "_\r\n", .null),
    sample("true", "#t\r\n", .boolean(true)),
    sample("false", "#f\r\n", .boolean(false)),
    sample("double", ",1.5\r\n", .double(1.5)),
    sample("negative double", ",-0.25\r\n", .double(-0.25)),
    sample("integral double", ",10\r\n", .double(10), canonical: false),
    sample("double with exponent", ",1.5e10\r\n", .double(1.5e10), canonical: false),
    sample("double with capital exponent", ",2E-3\r\n", .double(0.002), canonical: false),
    sample("double with signed exponent", ",3e+2\r\n", .double(300), canonical: false),
    sample("infinity", ",inf\r\n", .double(.infinity)),
    sample("negative infinity", ",-inf\r\n", .double(-.infinity)),
    sample(
        "big number",
        "(3492890328409238509324850943850943825024385\r\n",
        .bigNumber("3492890328409238509324850943850943825024385")
    ),
    sample("negative big number", "(-1\r\n", .bigNumber("-1")),
    sample("bulk error", "!21\r\nSYNTAX invalid syntax\r\n", .bulkError("SYNTAX invalid syntax")),
    sample("verbatim string", "=15\r\ntxt:Some string\r\n", .verbatimString(format: "txt", text: "Some string".bytes)),
    sample("empty verbatim string", "=4\r\nmkd:\r\n", .verbatimString(format: "mkd", text: [])),
    sample(
        "map",
        "%2\r\n+first\r\n:1\r\n+second\r\n:2\r\n",
        .map([.init(.simpleString("first"), .integer(1)), .init(.simpleString("second"), .integer(2))])
    ),
    sample("empty map", "%0\r\n", .map([])),
    sample("set", "~3\r\n+a\r\n+b\r\n+c\r\n", .set([.simpleString("a"), .simpleString("b"), .simpleString("c")])),
    sample("empty set", "~0\r\n", .set([])),
    sample(
        "attribute before a value",
        "|1\r\n+key-popularity\r\n%1\r\n$1\r\na\r\n,0.1923\r\n*1\r\n:2\r\n",
        .attribute(
            [.init(.simpleString("key-popularity"), .map([.init(.bulkString("a"), .double(0.1923))]))],
            .array([.integer(2)])
        )
    ),
    sample("empty attribute", "|0\r\n:1\r\n", .attribute([], .integer(1))),
    sample(
        "attribute inside an array",
        "*2\r\n|1\r\n+ttl\r\n:3600\r\n+a\r\n+b\r\n",
        .array([.attribute([.init(.simpleString("ttl"), .integer(3600))], .simpleString("a")), .simpleString("b")])
    ),
    sample(
        "push message",
        ">3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$5\r\nhello\r\n",
        .push([.bulkString("message"), .bulkString("news"), .bulkString("hello")])
    ),
    sample(
        "hello reply",
        "%2\r\n$6\r\nserver\r\n$5\r\nredis\r\n$5\r\nproto\r\n:3\r\n",
        .map([.init(.bulkString("server"), .bulkString("redis")), .init(.bulkString("proto"), .integer(3))])
    ),
    sample(
        "xrange reply",
        "*1\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\nd\r\n$2\r\n{}\r\n",
        .array([.array([.bulkString("1-0"), .array([.bulkString("d"), .bulkString("{}")])])])
    ),
]

@Suite struct RESPParserValidTests {
    @Test(arguments: validSamples)
    func parsesEveryWayTheBytesArrive(_ sample: ValidSample) {
        for feeding in Feeding.all(for: sample.input) {
            let outcome = parse(sample.input, feeding: feeding)
            #expect(outcome == ParseOutcome(values: [sample.value]), "\(feeding)")
        }
    }

    @Test(arguments: validSamples)
    func writesTheValueBackAsItsWireForm(_ sample: ValidSample) {
        if sample.isCanonical {
            #expect(sample.value.encoded == sample.input)
        }
        #expect(parse(sample.value.encoded) == ParseOutcome(values: [sample.value]))
    }

    @Test func pipelinedValuesComeOutInOrderWhereverTheyAreCut() {
        let input = validSamples.flatMap(\.input)
        let expected = ParseOutcome(values: validSamples.map(\.value))
        #expect(parse(input) == expected)
        #expect(parse(input, feeding: .byteByByte) == expected)
        for cut in stride(from: 0, through: input.count, by: 7) {
            #expect(parse(input, feeding: .split(at: cut)) == expected, "split at \(cut)")
        }
    }

    @Test func nanParsesAsNan() throws {
        for text in [",nan\r\n", ",-nan\r\n", ",+nan\r\n"] {
            let outcome = parse(text.bytes, feeding: .byteByByte)
            #expect(outcome.error == nil)
            guard case .double(let value)? = outcome.values.first else {
                Issue.record("\(text.debugDescription) gave \(outcome)")
                continue
            }
            #expect(value.isNaN)
        }
        #expect(RESPValue.double(.nan).encoded == ",nan\r\n".bytes)
    }

    @Test func aBulkStringIsNotSearchedForLinesAndMayHoldAnyByte() {
        let payload = (0...255).map { UInt8($0) } + "\r\n*1\r\n".bytes
        let input = "$\(payload.count)\r\n".bytes + payload + "\r\n".bytes
        for feeding in [Feeding.whole, .byteByByte, .split(at: 5), .split(at: 200)] {
            #expect(parse(input, feeding: feeding) == ParseOutcome(values: [.bulkString(payload)]), "\(feeding)")
        }
    }

    @Test func invalidUTF8InALineIsReplacedNotRejected() {
        let outcome = parse([UInt8(ascii: "+"), 0xFF, UInt8(ascii: "a"), 0x0D, 0x0A])
        #expect(outcome == ParseOutcome(values: [.simpleString("\u{FFFD}a")]))
    }

    @Test func bufferedBytesAndIdlenessFollowTheInput() throws {
        var parser = RESPParser()
        #expect(parser.isIdle)
        parser.append("*2\r\n:1\r\n:2".bytes)
        #expect(try parser.next() == nil)
        #expect(!parser.isIdle)
        #expect(parser.bufferedByteCount == 2, "the first element is consumed; `:2` waits for its CRLF")
        parser.append("\r\n+next".bytes)
        #expect(try parser.next() == .array([.integer(1), .integer(2)]))
        #expect(try parser.next() == nil)
        #expect(parser.bufferedByteCount == 5)
        parser.append("\r\n".bytes)
        #expect(try parser.next() == .simpleString("next"))
        #expect(parser.isIdle)
    }

    @Test func aLargeAggregateArrivingInPiecesIsParsedOnceAndCompletely() throws {
        let count = 20_000
        var input = "*\(count)\r\n".bytes
        for index in 0..<count {
            RESPValue.bulkString("element-\(index)").write(into: &input)
        }
        var parser = RESPParser()
        var values: [RESPValue] = []
        var offset = 0
        while offset < input.count {
            let end = min(input.count, offset + 1000)
            parser.append(input[offset..<end])
            offset = end
            while let value = try parser.next() {
                values.append(value)
            }
        }
        #expect(values == [.array((0..<count).map { .bulkString("element-\($0)") })])
    }
}
