import Testing

@testable import Spout

@Suite struct StreamFormatTests {
    @Test(
        arguments: [
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
        ] as [(String?, StreamFormat)]
    )
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

@Suite struct MediaRangeBytesTests {
    /// `Accept` values without `;`: the byte reading must agree with the parsed ranges for every format.
    @Test(arguments: [
        "application/json", "APPLICATION/JSON", "Application/Json", "*/*", "application/*", "text/*",
        "text/event-stream", "application/x-ndjson", " application/json ", "\tapplication/json\t",
        "application/json, text/plain, */*", ",,application/json,,", " , ,", "application/ json", "application /json",
        "application/json/x", "/json", "application/", "*/json", "*", "**/*", "text/html, application/xml",
        "application/x-ndjson, application/*, */*", "text/event-stream,application/json",
        String(repeating: "text/plain,", count: 64) + "application/json",
        String(repeating: "text/plain,", count: 63) + "application/json", "x/y, application/JSON, TEXT/*",
    ])
    func parameterlessBytesAgreeWithParsedRanges(accept: String) {
        let ranges = MediaRange.parseList(accept)
        var header = accept
        header.withUTF8 { bytes in
            for format in StreamFormat.allCases {
                let parts = format.mediaTypeParts
                let literals = format.mediaTypeLiterals
                let parsed = MediaRange.bestMatch(type: parts.type, subtype: parts.subtype, in: ranges)
                let read = MediaRange.bestMatch(type: literals.type, subtype: literals.subtype, inParameterless: bytes)
                #expect(parsed?.quality == read?.quality, "\(format) for \(accept)")
                #expect(parsed?.specificity == read?.specificity, "\(format) for \(accept)")
            }
        }
    }

    @Test func parameterlessHeaderThatExcludesEverythingIsNotAcceptable() throws {
        #expect(throws: Problem.notAcceptable("text/html, image/*", available: StreamFormat.allCases.map(\.mediaType)))
        {
            try StreamFormat.negotiate(format: nil, accept: "text/html, image/*")
        }
        #expect(throws: Problem.self) {
            try StreamFormat.negotiate(format: nil, accept: "application/json", allowed: [.sse, .ndjson])
        }
        #expect(try StreamFormat.negotiate(format: nil, accept: "application/*", allowed: [.json]) == .json)
    }
}
