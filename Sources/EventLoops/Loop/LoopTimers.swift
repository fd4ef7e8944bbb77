/// The timers of one ``LoopThread``: work due at a monotonic time, in deadline order, ties in the order they were
/// scheduled. A binary min-heap; no cancellation (the work checks its own state when it runs, as the callers of
/// ``EventLoop/schedule(afterNanoseconds:_:)`` do).
///
/// **Thread safety:** a value; its owner guards it.
struct LoopTimers {
    struct Timer {
        /// Monotonic nanoseconds.
        var deadline: UInt64
        /// Scheduling order, for ties.
        var order: UInt64
        var work: @Sendable () -> Void

        func precedes(_ other: Timer) -> Bool {
            deadline != other.deadline ? deadline < other.deadline : order < other.order
        }
    }

    private var heap: [Timer] = []
    private var scheduled: UInt64 = 0

    var isEmpty: Bool { heap.isEmpty }
    var count: Int { heap.count }
    /// The earliest deadline, if any.
    var nextDeadline: UInt64? { heap.first?.deadline }

    /// Adds `work`, due at `deadline`.
    mutating func add(deadline: UInt64, _ work: @escaping @Sendable () -> Void) {
        scheduled &+= 1
        heap.append(Timer(deadline: deadline, order: scheduled, work: work))
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].precedes(heap[parent]) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes the timers due at `now` and appends their work to `due`, earliest first.
    mutating func takeDue(now: UInt64, into due: inout [@Sendable () -> Void]) {
        while let first = heap.first, first.deadline <= now {
            due.append(first.work)
            removeFirst()
        }
    }

    /// Removes every timer, earliest first.
    mutating func takeAll() -> [Timer] {
        var all: [Timer] = []
        all.reserveCapacity(heap.count)
        while let first = heap.first {
            all.append(first)
            removeFirst()
        }
        return all
    }

    private mutating func removeFirst() {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1
            guard left < heap.count else { break }
            let right = left + 1
            let child = right < heap.count && heap[right].precedes(heap[left]) ? right : left
            guard heap[child].precedes(heap[parent]) else { break }
            heap.swapAt(child, parent)
            parent = child
        }
    }
}
