import Testing

@testable import HTTPServer

@Suite struct ChunkedEncoderTests {
    private func text(_ buffer: borrowing OutboundBuffer) -> String {
        String(decoding: Array(buffer.readableBytes), as: UTF8.self)
    }

    @Test func manyWritesBetweenFlushesBecomeOneMinimalChunk() {
        var buffer = OutboundBuffer()
        var encoder = ChunkedEncoder()
        for word in ["id: 1\n", "data: 1\n\n", "id: 2\n", "data: 2\n\n"] {
            encoder.openChunkIfNeeded(in: &buffer)
            buffer.append(word)
        }
        encoder.closeChunk(in: &buffer)
        #expect(text(buffer) == "1e\r\nid: 1\ndata: 1\n\nid: 2\ndata: 2\n\n\r\n")
    }

    @Test func chunkAfterPendingBytesIsZeroPaddedSoNothingMoves() {
        var buffer = OutboundBuffer()
        var encoder = ChunkedEncoder()
        buffer.append("HEAD" as String)
        encoder.openChunkIfNeeded(in: &buffer)
        buffer.append("abc" as String)
        encoder.closeChunk(in: &buffer)
        #expect(text(buffer) == "HEAD0000000000000003\r\nabc\r\n")
    }

    @Test func emptyChunkIsRemovedAndFinishWritesTheLastChunk() {
        var buffer = OutboundBuffer()
        var encoder = ChunkedEncoder()
        encoder.openChunkIfNeeded(in: &buffer)
        encoder.closeChunk(in: &buffer)
        let isEmpty = buffer.isEmpty
        #expect(isEmpty)
        encoder.openChunkIfNeeded(in: &buffer)
        buffer.append("xy" as String)
        encoder.finish(in: &buffer)
        #expect(text(buffer) == "2\r\nxy\r\n0\r\n\r\n")
        #expect(!encoder.hasOpenChunk)
    }

    @Test(arguments: [(0, "0"), (1, "1"), (15, "f"), (16, "10"), (255, "ff"), (65_536, "10000")])
    func formatsSizesAsLowercaseHex(size: Int, hex: String) {
        var buffer = OutboundBuffer()
        var encoder = ChunkedEncoder()
        encoder.openChunkIfNeeded(in: &buffer)
        buffer.append(contentsOf: [UInt8](repeating: 0x61, count: size))
        encoder.closeChunk(in: &buffer)
        let expected = size == 0 ? "" : hex + "\r\n" + String(repeating: "a", count: size) + "\r\n"
        #expect(text(buffer) == expected)
    }
}
