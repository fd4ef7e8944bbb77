import Testing

@testable import HTTPServer

@Suite struct HTTPServerPlaceholderTests {
    @Test func moduleLinks() {
        #expect(Bool(true))
    }
}
