import Testing

@testable import Spout

@Suite struct SpoutPlaceholderTests {
    @Test func moduleLinks() {
        #expect(Bool(true))
    }
}
