import RESP
import Testing

@Suite struct RESPValueTests {
    @Test func accessorsReadTheValueTheyName() {
        #expect(RESPValue.bulkString("a").string == "a")
        #expect(RESPValue.simpleString("OK").string == "OK")
        #expect(RESPValue.verbatimString(format: "txt", text: "t".bytes).bytes == "t".bytes)
        #expect(RESPValue.bulkString(nil).string == nil)
        #expect(RESPValue.integer(1).string == nil)
        #expect(RESPValue.integer(5).integer == 5)
        #expect(RESPValue.bulkString("5").integer == nil)
        #expect(RESPValue.array([.null]).elements == [.null])
        #expect(RESPValue.set([.null]).elements == [.null])
        #expect(RESPValue.push([.null]).elements == [.null])
        #expect(RESPValue.array(nil).elements == nil)
        #expect(RESPValue.error("ERR x").errorMessage == "ERR x")
        #expect(RESPValue.bulkError("ERR y").errorMessage == "ERR y")
        #expect(RESPValue.simpleString("ERR").errorMessage == nil)
        let nulls: [RESPValue] = [.null, .bulkString(nil), .array(nil)]
        #expect(nulls.map(\.isNull) == [true, true, true])
        let others: [RESPValue] = [.bulkString([]), .array([]), .integer(0), .boolean(false)]
        #expect(others.map(\.isNull) == [false, false, false, false])
        let nested = RESPValue.attribute([], .attribute([.init(.null, .null)], .integer(1)))
        #expect(nested.withoutAttributes == .integer(1))
    }

    @Test func descriptionsReadLikeRedisCli() {
        let value = RESPValue.array([
            .simpleString("OK"), .error("ERR no"), .integer(3), .bulkString("a\"b\n"), .bulkString(nil), .null,
            .boolean(true), .double(1.5), .bigNumber("12"), .bulkError("SYNTAX x"),
            .verbatimString(format: "txt", text: "hi".bytes), .map([.init(.bulkString("k"), .integer(1))]),
            .set([.integer(2)]), .attribute([.init(.bulkString("ttl"), .integer(9))], .integer(4)),
            .push([.bulkString("message")]), .array(nil),
        ])
        #expect(
            value.description
                == #"[OK, (error) ERR no, (integer) 3, "a\x22b\x0a", (nil), (nil), (boolean) true, (double) 1.5, "#
                + #"(big number) 12, (error) SYNTAX x, (txt) "hi", {"k": (integer) 1}, ~{(integer) 2}, "#
                + #"|{"ttl": (integer) 9} (integer) 4, >["message"], (nil)]"#
        )
        let long = RESPValue.bulkString([UInt8](repeating: 0x61, count: 300))
        #expect(long.description == "\"" + String(repeating: "a", count: 256) + "...\"")
    }
}
