import Testing

@testable import HTTPServer

@Suite struct HeadersTests {
    @Test func lookupIgnoresCaseAndReturnsFirstValue() {
        let headers: Headers = ["Content-Type": "text/plain", "X-Tag": "a", "x-tag": "b"]
        #expect(headers["content-type"] == "text/plain")
        #expect(headers["CONTENT-TYPE"] == "text/plain")
        #expect(headers["X-TAG"] == "a")
        #expect(headers.values(for: "x-Tag") == ["a", "b"])
        #expect(headers["missing"] == nil)
        #expect(headers.contains("x-tag"))
        #expect(!headers.contains("x-ta"))
        #expect(headers.count == 3)
    }
}
