import Testing

@testable import Spout

@Suite struct StreamFormatTests {
    @Test(arguments: [
        (nil, StreamFormat.sse),
        ("", .sse),
        ("*/*", .sse),
        ("text/event-stream", .sse),
        ("application/json", .json),
        ("application/x-ndjson", .ndjson),
        ("application/json, text/plain, */*", .json),
        ("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", .sse),
        ("application/json;q=0.5, application/x-ndjson;q=0.9", .ndjson),
        ("text/event-stream;q=0.1, application/json", .json),
        ("application/*", .ndjson),
        ("APPLICATION/JSON", .json),
        ("*/*;q=0.2, text/event-stream;q=0", .ndjson),
        ("garbage, application/json;q=abc, application/x-ndjson", .ndjson),
    ] as [(String?, StreamFormat)])
    func acceptHeaderPicksTheBestFormat(accept: String?, expected: StreamFormat) throws {
        #expect(try StreamFormat.negotiate(format: nil, accept: accept) == expected)
    }

    @Test func formatParameterOverridesAccept() throws {
        #expect(try StreamFormat.negotiate(format: "json", accept: "text/event-stream") == .json)
        #expect(try StreamFormat.negotiate(format: "NDJSON", accept: nil) == .ndjson)
    }

    @Test func unknownFormatIsABadParameter() {
        #expect(throws: Problem.invalidParameter("format", "format must be one of sse, ndjson, json, got \"xml\"")) {
            try StreamFormat.negotiate(format: "xml", accept: nil)
        }
    }

    @Test func acceptThatExcludesEverythingIsNotAcceptable() {
        #expect {
            try StreamFormat.negotiate(format: nil, accept: "image/png")
        } throws: { error in
            (error as? Problem)?.status == 406
        }
        #expect {
            try StreamFormat.negotiate(format: nil, accept: "*/*;q=0")
        } throws: { error in
            (error as? Problem)?.status == 406
        }
    }
}
