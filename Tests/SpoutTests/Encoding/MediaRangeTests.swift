import Testing

@testable import Spout

@Suite struct MediaRangeTests {
    /// A non-ASCII member sends a header down the character-based parser; the ASCII members before it
    /// must come out exactly as the byte-based parser reads them alone.
    @Test(arguments: [
        "application/json",
        "APPLICATION/JSON",
        " Application/Json ; q=0.9 , text/event-stream;q=0.1",
        "text/*;q=0.5, application/json",
        "*/*",
        "application/json;q=0",
        "application/json;Q=0.25;charset=utf-8",
        "text/event-stream; q = 0.7 ,\t*/*;q=abc",
        "a/b;q=2, c/d;q=-1, e/f;q=nan, g/h;q=",
        ",,, ;q=1, /json, application/, application/json/x, text/plain",
        "text/html;level=1;q=0.3, text/html;q",
    ])
    func asciiHeadersParseAsTheCharacterParserDoes(header: String) {
        let ascii = MediaRange.parseList(header)
        let viaCharacters = MediaRange.parseList(header + ", é/ü")
        #expect(viaCharacters.last == MediaRange(type: "é", subtype: "ü", quality: 1))
        #expect(Array(viaCharacters.dropLast()) == ascii)
    }

    @Test func readsTypesQualitiesAndSkipsMalformedMembers() {
        let ranges = MediaRange.parseList(" Text/Event-Stream;q=0.5 , nonsense, application/json;q=x")
        #expect(
            ranges == [
                MediaRange(type: "text", subtype: "event-stream", quality: 0.5),
                MediaRange(type: "application", subtype: "json", quality: 0),
            ]
        )
    }
}
