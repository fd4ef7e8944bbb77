import Testing

@testable import Reactive

@Suite struct RingQueueTests {
    /// Runs a fixed pseudo-random mix of appends and removals at both ends (wrapping around the
    /// ring and growing it many times) against an array doing the same.
    @Test func matchesAnArrayThroughWrapAroundAndGrowth() {
        var queue = RingQueue<String>()
        var model: [String] = []
        var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
        for step in 0..<20_000 {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            switch (seed >> 33) % 5 {
            case 0, 1, 2:
                queue.append("v\(step)")
                model.append("v\(step)")
            case 3:
                #expect(queue.popFirst() == (model.isEmpty ? nil : model.removeFirst()))
            default:
                #expect(queue.popLast() == model.popLast())
            }
            if step % 997 == 0 {
                #expect(queue.count == model.count)
                #expect(queue.first == model.first)
            }
        }
        while let element = queue.popFirst() {
            #expect(element == model.removeFirst())
        }
        #expect(model.isEmpty)
        #expect(queue.isEmpty)
    }

    @Test func aCopyIsIndependentOfTheOriginal() {
        var queue = RingQueue<Int>()
        for value in 0..<5 { queue.append(value) }
        var copy = queue
        _ = copy.popFirst()
        copy.append(99)
        #expect(queue.popFirst() == 0)
        #expect(copy.popFirst() == 1)
        #expect(queue.count == 4)
        #expect(copy.count == 4)
    }
}
