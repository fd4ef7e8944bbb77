import Testing

@testable import HTTPServer

@Suite struct OutboundBufferTests {
    private func contents(_ buffer: borrowing OutboundBuffer) -> [UInt8] {
        Array(buffer.readableBytes)
    }

    @Test func startsWithoutStorageAndAllocatesOnFirstAppend() {
        var buffer = OutboundBuffer()
        let capacity = buffer.storageCapacity
        #expect(capacity == 0)
        buffer.append("abc" as String)
        let grown = buffer.storageCapacity
        #expect(grown >= OutboundBuffer.minimumAllocation)
        #expect(contents(buffer) == Array("abc".utf8))
    }

    @Test func appendsBytesStringsAndDecimals() {
        var buffer = OutboundBuffer()
        buffer.append(UInt8(ascii: "["))
        buffer.appendDecimal(0)
        buffer.append(UInt8(ascii: ","))
        buffer.appendDecimal(UInt64.max)
        buffer.append(UInt8(ascii: ","))
        buffer.appendDecimal(Int.min)
        buffer.append(contentsOf: [UInt8(ascii: "]")])
        #expect(String(decoding: contents(buffer), as: UTF8.self) == "[0,18446744073709551615,-9223372036854775808]")
    }

    @Test func consumeDrainsFromTheFrontAndResetsWhenEmpty() {
        var buffer = OutboundBuffer()
        buffer.append("hello world" as String)
        buffer.consume(6)
        #expect(contents(buffer) == Array("world".utf8))
        buffer.consume(5)
        let isEmpty = buffer.isEmpty
        #expect(isEmpty)
        buffer.append("x" as String)
        #expect(contents(buffer) == [UInt8(ascii: "x")])
    }

    @Test func growsAcrossManyAppendsKeepingOrder() {
        var buffer = OutboundBuffer()
        var expected: [UInt8] = []
        for index in 0..<10_000 {
            let byte = UInt8(truncatingIfNeeded: index)
            buffer.append(byte)
            expected.append(byte)
            if index % 3_000 == 2_999 {
                buffer.consume(1_000)
                expected.removeFirst(1_000)
            }
        }
        #expect(contents(buffer) == expected)
    }

    @Test func writableBytesPathAppendsWhatTheClosureWrote() {
        var buffer = OutboundBuffer()
        let written = buffer.withUnsafeWritableBytes(minimumCapacity: 8) { space in
            #expect(space.count >= 8)
            for index in 0..<5 { space[index] = UInt8(ascii: "a") + UInt8(index) }
            return 5
        }
        #expect(written == 5)
        #expect(contents(buffer) == Array("abcde".utf8))
    }

    @Test func storageCanBeTakenWhenEmptyAndAdoptedBack() {
        var buffer = OutboundBuffer()
        buffer.append("data" as String)
        #expect(buffer.takeStorageIfEmpty() == nil)
        buffer.consume(4)
        let storage = buffer.takeStorageIfEmpty()
        #expect(storage != nil)
        let capacity = buffer.storageCapacity
        #expect(capacity == 0)
        var other = OutboundBuffer()
        other.adopt(storage!)
        other.append("again" as String)
        #expect(contents(other) == Array("again".utf8))
    }

    @Test func shrinkMovesFewPendingBytesOutOfALargeAllocation() {
        var buffer = OutboundBuffer()
        buffer.append(UnsafeRawBufferPointer(start: nil, count: 0))
        let large = [UInt8](repeating: 7, count: 200_000)
        buffer.append(contentsOf: large)
        buffer.consume(199_000)
        let old = buffer.shrink(keepingAtMost: 4, minimumCapacity: 16 * 1024)
        #expect(old != nil)
        old?.deallocate()
        let capacity = buffer.storageCapacity
        #expect(capacity < 16 * 1024)
        #expect(contents(buffer) == [UInt8](repeating: 7, count: 1_000))
    }

    @Test func reserveCapacityAllocatesWhatIsAskedNotTheNextDoubling() {
        var buffer = OutboundBuffer()
        buffer.append("head" as String)
        buffer.reserveCapacity(20 * 1024)
        let reserved = buffer.storageCapacity
        #expect(reserved == 20 * 1024)
        buffer.reserveCapacity(5_000)  // already larger: unchanged
        let unchanged = buffer.storageCapacity
        #expect(unchanged == 20 * 1024)
        buffer.reserveCapacity(20 * 1024 + 1)  // rounded up to 64 bytes
        let rounded = buffer.storageCapacity
        #expect(rounded == 20 * 1024 + 64)
        #expect(contents(buffer) == Array("head".utf8))
    }

    @Test func shrinkToWhatIsPendingKeepsThePendingBytes() {
        var buffer = OutboundBuffer()
        buffer.reserveCapacity(20 * 1024)
        buffer.append(contentsOf: [UInt8](repeating: 9, count: 3_000))
        buffer.consume(1_000)
        let old = buffer.shrink(keepingAtMost: 1, minimumCapacity: 0)
        #expect(old?.count == 20 * 1024)
        old?.deallocate()
        let capacity = buffer.storageCapacity
        #expect(capacity == 2_048)  // 2,000 pending bytes, rounded up to 64
        #expect(contents(buffer) == [UInt8](repeating: 9, count: 2_000))
        // Already right-sized: nothing to do.
        let again = buffer.shrink(keepingAtMost: 1, minimumCapacity: 0)
        #expect(again == nil)
    }
}
