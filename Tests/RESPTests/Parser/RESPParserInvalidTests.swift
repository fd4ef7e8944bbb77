import RESP
import Testing

/// A malformed or hostile input and the error it must raise.
struct InvalidSample: CustomTestStringConvertible, Sendable {
    var name: String
    var input: [UInt8]
    var error: RESPParseError
    var configuration = RESPParser.Configuration()

    var testDescription: String { name }
}

private func sample(
    _ name: String,
    _ input: String,
    _ error: RESPParseError,
    configuration: RESPParser.Configuration = .init()
) -> InvalidSample {
    InvalidSample(name: name, input: input.bytes, error: error, configuration: configuration)
}

private let small = RESPParser.Configuration(
    maxBulkBytes: 8,
    maxAggregateCount: 3,
    maxDepth: 2,
    maxLineBytes: 10,
    maxBufferedBytes: 200
)

let invalidSamples: [InvalidSample] = [
    // Framing.
    sample("unknown type byte", "?what\r\n", .unknownType(UInt8(ascii: "?"))),
    sample("streamed chunk marker", ";4\r\nabcd\r\n", .unknownType(UInt8(ascii: ";"))),
    sample("streamed end marker", ".\r\n", .unknownType(UInt8(ascii: "."))),
    sample("empty line", "\r\n", .unknownType(0x0D)),
    sample("inline command from a server", "PING\r\n", .unknownType(UInt8(ascii: "P"))),
    sample("bare line feed", "+OK\n", .bareLineFeed),
    sample("line feed first", "\n", .bareLineFeed),
    sample("carriage return inside a line", "+O\rK\r\n", .bareCarriageReturn),
    sample("tls alert bytes", "\u{15}\u{3}\u{1}\u{0}\u{2}\u{2}\n", .bareLineFeed),
    sample("http answer", "HTTP/1.1 400 Bad Request\r\n", .unknownType(UInt8(ascii: "H"))),
    // Numbers.
    sample("integer with letters", ":12a\r\n", .invalidInteger("12a")),
    sample("empty integer", ":\r\n", .invalidInteger("")),
    sample("integer sign only", ":-\r\n", .invalidInteger("-")),
    sample("integer with space", ": 1\r\n", .invalidInteger(" 1")),
    sample("integer above Int64", ":9223372036854775808\r\n", .invalidInteger("9223372036854775808")),
    sample("integer below Int64", ":-9223372036854775809\r\n", .invalidInteger("-9223372036854775809")),
    sample(
        "integer far beyond Int64",
        ":99999999999999999999999999\r\n",
        .invalidInteger("99999999999999999999999999")
    ),
    sample("double with letters", ",1.5x\r\n", .invalidDouble("1.5x")),
    sample("double hexadecimal", ",0x1p3\r\n", .invalidDouble("0x1p3")),
    sample("double infinity spelled out", ",infinity\r\n", .invalidDouble("infinity")),
    sample("double nan payload", ",nan(1)\r\n", .invalidDouble("nan(1)")),
    sample("double without integral part", ",.5\r\n", .invalidDouble(".5")),
    sample("double without fraction digits", ",1.\r\n", .invalidDouble("1.")),
    sample("double without exponent digits", ",1e\r\n", .invalidDouble("1e")),
    sample("empty double", ",\r\n", .invalidDouble("")),
    sample("boolean yes", "#y\r\n", .invalidBoolean("y")),
    sample("boolean true spelled out", "#true\r\n", .invalidBoolean("true")),
    sample("empty boolean", "#\r\n", .invalidBoolean("")),
    sample("big number with letters", "(12x\r\n", .invalidBigNumber("12x")),
    sample("big number sign only", "(-\r\n", .invalidBigNumber("-")),
    sample("null with text", "_x\r\n", .invalidNull("x")),
    // Lengths.
    sample("bulk length negative two", "$-2\r\n", .invalidLength("-2")),
    sample("bulk length with plus", "$+1\r\nx\r\n", .invalidLength("+1")),
    sample("bulk length empty", "$\r\n", .invalidLength("")),
    sample("bulk length streamed", "$?\r\n;1\r\na\r\n;0\r\n", .invalidLength("?")),
    sample("bulk length beyond Int", "$99999999999999999999\r\n", .invalidLength("99999999999999999999")),
    sample("array count letters", "*x\r\n", .invalidLength("x")),
    sample("array count streamed", "*?\r\n:1\r\n.\r\n", .invalidLength("?")),
    sample("null map", "%-1\r\n", .invalidLength("-1")),
    sample("null set", "~-1\r\n", .invalidLength("-1")),
    sample("null push", ">-1\r\n", .invalidLength("-1")),
    sample("null attribute", "|-1\r\n", .invalidLength("-1")),
    sample("null bulk error", "!-1\r\n", .invalidLength("-1")),
    sample("null verbatim string", "=-1\r\n", .invalidLength("-1")),
    sample("bulk longer than declared", "$3\r\nhello\r\n", .invalidBulkTerminator),
    sample("bulk shorter than declared", "$7\r\nhello\r\n+OK\r\n", .invalidBulkTerminator),
    sample("bulk ended by bare lf", "$2\r\nab\n\r\n", .invalidBulkTerminator),
    sample("verbatim without format", "=3\r\ntxt\r\n", .invalidVerbatimString("txt")),
    sample("verbatim without colon", "=5\r\ntxt-a\r\n", .invalidVerbatimString("txt-a")),
    InvalidSample(
        name: "verbatim with a byte past ASCII in its format",
        input: Array("=8\r\ntx".utf8) + [0x84] + Array(":abcd\r\n".utf8),
        error: .invalidVerbatimString("tx\\x84:abcd")
    ),
    sample("verbatim with a space in its format", "=5\r\nt x:a\r\n", .invalidVerbatimString("t x:a")),
    // Limits.
    sample("bulk over the limit", "$9\r\n123456789\r\n", .bulkTooLong(length: 9, limit: 8), configuration: small),
    sample(
        "bulk declared huge",
        "$9223372036854775807\r\n",
        .bulkTooLong(length: 9_223_372_036_854_775_807, limit: 67_108_864)
    ),
    sample("bulk error over the limit", "!9\r\nERR 12345\r\n", .bulkTooLong(length: 9, limit: 8), configuration: small),
    sample("array over the limit", "*4\r\n", .aggregateTooLarge(count: 4, limit: 3), configuration: small),
    sample("map over the limit", "%4\r\n", .aggregateTooLarge(count: 4, limit: 3), configuration: small),
    sample(
        "array declared huge",
        "*9223372036854775807\r\n",
        .aggregateTooLarge(count: 9_223_372_036_854_775_807, limit: 1_048_576)
    ),
    sample("nesting over the limit", "*1\r\n*1\r\n*1\r\n:1\r\n", .nestingTooDeep(limit: 2), configuration: small),
    sample("empty aggregate over the limit", "*1\r\n~1\r\n%0\r\n", .nestingTooDeep(limit: 2), configuration: small),
    sample("attribute counts as a level", "*1\r\n|1\r\n+a\r\n*0\r\n", .nestingTooDeep(limit: 2), configuration: small),
    sample("line over the limit", "+12345678901\r\n", .lineTooLong(limit: 10), configuration: small),
    sample("unterminated line over the limit", "+123456789012", .lineTooLong(limit: 10), configuration: small),
    // Found by the fuzzer: the length must be judged before the line ending, or splits disagree.
    sample(
        "long line ending in a bare lf",
        "-Enknown col\u{0}Rnd\rlll\n",
        .lineTooLong(limit: 10),
        configuration: small
    ),
    sample("line at the limit ending in a bare lf", "+123456789\n", .bareLineFeed, configuration: small),
    sample(
        "bulk that cannot fit the buffer limit",
        "*1\r\n$8\r\n",
        .valueTooLarge(limit: 16),
        configuration: .init(maxBulkBytes: 8, maxBufferedBytes: 16)
    ),
]

@Suite struct RESPParserInvalidTests {
    @Test(arguments: invalidSamples)
    func rejectsWithTheErrorNamingTheCause(_ sample: InvalidSample) {
        for feeding in Feeding.all(for: sample.input) {
            let outcome = parse(sample.input, feeding: feeding, configuration: sample.configuration)
            #expect(outcome.error == sample.error, "\(feeding)")
        }
        #expect(sample.error.description.first?.isLowercase == true)
    }

    @Test func aFailedParserKeepsFailingWithTheSameError() throws {
        var parser = RESPParser()
        parser.append(":x\r\n".bytes)
        #expect(throws: RESPParseError.invalidInteger("x")) { try parser.next() }
        parser.append("+OK\r\n".bytes)
        #expect(throws: RESPParseError.invalidInteger("x")) { try parser.next() }
        #expect(parser.bufferedByteCount == 0, "a failed parser holds nothing")
    }

    @Test func valuesBeforeTheErrorAreDelivered() {
        let outcome = parse("+OK\r\n:1\r\n:oops\r\n+never\r\n".bytes, feeding: .byteByByte)
        #expect(outcome == ParseOutcome(values: [.simpleString("OK"), .integer(1)], error: .invalidInteger("oops")))
    }

    @Test func deepNestingFailsAtTheLimitWithoutRecursion() {
        // A million levels would blow any stack if the parser recursed; it must stop at the limit.
        let input = Array(repeating: "*1\r\n".bytes, count: 1_000_000).flatMap { $0 }
        #expect(parse(input).error == .nestingTooDeep(limit: 32))
        let deepest = RESPParser.Configuration(maxDepth: 10_000)
        #expect(deepest.maxDepth == 256, "the depth limit is capped")
        #expect(parse(input, configuration: deepest).error == .nestingTooDeep(limit: 256))
    }

    @Test func nestingUpToTheLimitParses() {
        let depth = 256
        let input = Array(repeating: "*1\r\n".bytes, count: depth).flatMap { $0 } + ":7\r\n".bytes
        var expected = RESPValue.integer(7)
        for _ in 0..<depth {
            expected = .array([expected])
        }
        let outcome = parse(input, feeding: .byteByByte, configuration: .init(maxDepth: depth))
        #expect(outcome == ParseOutcome(values: [expected]))
    }

    @Test func manyTinyElementsAreChargedForTheirMemory() {
        // 100,000 nulls are 300 KB on the wire but take several MB as values: the buffer limit counts that.
        let count = 100_000
        let input = "*\(count)\r\n".bytes + Array(repeating: "_\r\n".bytes, count: count).flatMap { $0 }
        let limit = 1 << 20
        let outcome = parse(input, configuration: .init(maxBufferedBytes: limit))
        #expect(outcome.error == .valueTooLarge(limit: limit))
        #expect(outcome.values.isEmpty)
        #expect(parse(input, configuration: .init(maxBufferedBytes: 64 << 20)).values.first?.elements?.count == count)
    }

    @Test func theLimitALinePassesFirstIsTheErrorHoweverTheBytesArrive() {
        // Found by the fuzzer: a long line inside an aggregate passes the buffer limit after a few bytes and the
        // line limit later; fed whole it used to report the line, fed in pieces the buffer.
        let input = "*2\r\n:1\r\n+123456789012\r\n".bytes
        let held = 8 + MemoryLayout<RESPValue>.stride
        let tight = RESPParser.Configuration(maxLineBytes: 10, maxBufferedBytes: held + 5)
        let loose = RESPParser.Configuration(maxLineBytes: 10, maxBufferedBytes: held + 100)
        for feeding in Feeding.all(for: input) {
            #expect(parse(input, feeding: feeding, configuration: tight).error == .valueTooLarge(limit: held + 5))
            #expect(parse(input, feeding: feeding, configuration: loose).error == .lineTooLong(limit: 10))
        }
    }

    @Test func anIncompleteValueFailsOnceItHoldsMoreThanTheLimit() throws {
        var parser = RESPParser(configuration: .init(maxBulkBytes: 1000, maxBufferedBytes: 1000))
        parser.append("*3\r\n$400\r\n".bytes + [UInt8](repeating: 0x61, count: 400) + "\r\n$400\r\n".bytes)
        #expect(try parser.next() == nil)
        parser.append([UInt8](repeating: 0x61, count: 400))
        #expect(try parser.next() == nil)
        parser.append("\r\n$400\r\n".bytes)
        #expect(throws: RESPParseError.valueTooLarge(limit: 1000)) { try parser.next() }
    }

    @Test func negativeLimitsCountAsZero() {
        let configuration = RESPParser.Configuration(
            maxBulkBytes: -1,
            maxAggregateCount: -1,
            maxDepth: -1,
            maxLineBytes: -1,
            maxBufferedBytes: -1
        )
        #expect(configuration.maxBulkBytes == 0 && configuration.maxAggregateCount == 0 && configuration.maxDepth == 0)
        #expect(configuration.maxLineBytes == 0 && configuration.maxBufferedBytes == 0)
        #expect(parse("*0\r\n".bytes, configuration: configuration).error == .valueTooLarge(limit: 0))
        let noAggregates = RESPParser.Configuration(maxDepth: 0)
        #expect(parse("*0\r\n".bytes, configuration: noAggregates).error == .nestingTooDeep(limit: 0))
        #expect(parse(":1\r\n".bytes, configuration: noAggregates).values == [.integer(1)])
    }

    @Test func errorsQuoteTheOffendingBytesEscapedAndShort() {
        let long = String(repeating: "9", count: 100) + "\u{1}"
        let outcome = parse(":\(long)\r\n".bytes)
        #expect(outcome.error == .invalidInteger(String(repeating: "9", count: 64) + "..."))
        #expect(parse(":\u{1}\"\r\n".bytes).error == .invalidInteger("\\x01\\x22"))
    }
}
