import Testing

@testable import Sequences

@Suite struct SequencesPlaceholderTests {
    @Test func moduleLinks() {
        #expect(Bool(true))
    }
}
