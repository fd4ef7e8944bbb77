import HTTPServer
import Sequences
import Testing

@testable import Spout

/// `SSETermEncoder.append(contentsOf:to:)` writes runs of small values into one reservation; it must
/// produce exactly the bytes of one `append(_:to:)` per term, whatever mix of value sizes a batch holds.
@Suite struct SSETermEncoderBatchTests {
    private let encoder = SSETermEncoder(retryMilliseconds: 1_000)

    private func oneByOne(_ terms: [Term]) -> [UInt8] {
        var buffer = OutboundBuffer()
        for term in terms { encoder.append(term, to: &buffer) }
        return Array(buffer.readableBytes)
    }

    private func batched(_ terms: [Term]) -> [UInt8] {
        var buffer = OutboundBuffer()
        terms.withUnsafeBufferPointer { encoder.append(contentsOf: $0, to: &buffer) }
        return Array(buffer.readableBytes)
    }

    @Test func aBatchOfSmallValuesMatchesOneAppendPerTerm() {
        let terms = (0..<130).map { Term(index: $0 * 7_919, value: BigUInt(UInt64($0) * 999_999_999_937)) }
        let bytes = batched(terms)
        #expect(bytes == oneByOne(terms))
        #expect(String(decoding: bytes.prefix(17), as: UTF8.self) == "id: 0\ndata: 0\n\nid")
    }

    @Test(arguments: [0, 1, 15, 16, 17, 39])
    func largeValuesAnywhereInABatchKeepTheOrderAndBytes(largeAt position: Int) {
        let large = BigUInt(UInt64.max) * UInt64.max
        var terms = (0..<40).map { Term(index: $0, value: BigUInt(UInt64($0))) }
        terms[position] = Term(index: position, value: large)
        terms[39 - position / 2] = Term(index: 39 - position / 2, value: BigUInt(1_000_000_000_000_000_000))
        let bytes = batched(terms)
        #expect(bytes == oneByOne(terms))
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.contains("id: \(position)\ndata: \(large.description)\n\n"))
        #expect(text.hasSuffix("id: 39\ndata: \(terms[39].value.description)\n\n"))
    }
}
