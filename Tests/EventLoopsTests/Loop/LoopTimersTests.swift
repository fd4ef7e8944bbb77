import Testing

@testable import EventLoops

@Suite struct LoopTimersTests {
    /// Timers come out earliest first, ties in the order they were added, and only once due.
    @Test func dueTimersComeOutInDeadlineOrderTiesInSchedulingOrder() {
        var generator = SystemRandomNumberGenerator()
        let recorder = OrderRecorder()
        var timers = LoopTimers()
        var added: [(deadline: UInt64, label: Int)] = []
        for label in 0..<500 {
            let deadline = UInt64.random(in: 1...50, using: &generator) * 10
            added.append((deadline, label))
            timers.add(deadline: deadline) { recorder.append(label) }
        }
        // Stable sort: equal deadlines keep the order they were added in.
        let expected = added.enumerated().sorted { ($0.element.deadline, $0.offset) < ($1.element.deadline, $1.offset) }
        #expect(timers.nextDeadline == expected.first?.element.deadline)
        var due: [@Sendable () -> Void] = []
        timers.takeDue(now: 0, into: &due)
        #expect(due.isEmpty)
        timers.takeDue(now: 250, into: &due)
        for work in due { work() }
        let order = recorder.labels
        #expect(order == expected.filter { $0.element.deadline <= 250 }.map(\.element.label))
        #expect(timers.count == added.count - order.count)
        #expect(timers.nextDeadline.map { $0 > 250 } ?? true)
        let rest = timers.takeAll()
        #expect(rest.map(\.deadline) == expected.filter { $0.element.deadline > 250 }.map(\.element.deadline))
        #expect(timers.isEmpty)
    }
}

/// Labels appended by timers' work, in the order it ran.
private final class OrderRecorder: @unchecked Sendable {  // Used from one thread in the test.
    private(set) var labels: [Int] = []
    func append(_ label: Int) { labels.append(label) }
}
