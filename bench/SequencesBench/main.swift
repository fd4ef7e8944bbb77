// Benchmarks for module Sequences: what one element costs the publisher, the demand bridge pattern and
// the SSE encoder's decimal writing. Run in release: `swift run -c release --package-path bench sequences-bench`.
// Each figure is the median of 5 runs after one warm-up run, in thread CPU time (CLOCK_THREAD_CPUTIME_ID), so
// that time spent descheduled on a shared machine does not count; the minimum is shown beside it.

import Glibc
import Reactive
import Sequences

// MARK: Subscribers

/// Requests `.unlimited` and counts; the checksum keeps the optimizer from dropping the work.
final class UnlimitedCounter: Subscriber {
    typealias Input = Term
    typealias Failure = Never

    var received = 0
    var checksum = 0

    func receive(subscription: any Subscription) {
        subscription.request(.unlimited)
    }

    func receive(_ input: Term) -> Subscribers.Demand {
        received &+= 1
        checksum &+= input.index
        return .none
    }

    func receive(completion: Subscribers.Completion<Never>) {}
}

/// Keeps its subscription and requests nothing by itself: the driver requests windows from outside, the
/// way the service's demand bridge does when the socket drains.
final class WindowCounter: Subscriber {
    typealias Input = Term
    typealias Failure = Never

    var subscription: (any Subscription)?
    var received = 0
    var checksum = 0
    var finished = false

    func receive(subscription: any Subscription) {
        self.subscription = subscription
    }

    func receive(_ input: Term) -> Subscribers.Demand {
        received &+= 1
        checksum &+= input.index
        return .none
    }

    func receive(completion: Subscribers.Completion<Never>) {
        finished = true
        subscription = nil
    }
}

/// Requests a window, and the next one from inside `receive(_:)` when the previous is used up.
final class ReentrantWindowCounter: Subscriber {
    typealias Input = Term
    typealias Failure = Never

    let window: Int
    var subscription: (any Subscription)?
    var left = 0
    var received = 0
    var checksum = 0

    init(window: Int) {
        self.window = window
    }

    func receive(subscription: any Subscription) {
        self.subscription = subscription
        left = window
        subscription.request(.max(window))
    }

    func receive(_ input: Term) -> Subscribers.Demand {
        received &+= 1
        checksum &+= input.index
        left -= 1
        if left == 0 {
            left = window
            subscription?.request(.max(window))
        }
        return .none
    }

    func receive(completion: Subscribers.Completion<Never>) {
        subscription = nil
    }
}

/// Writes each term as an SSE event, `id: <index>\ndata: <value>\n\n`, into a 64 KiB buffer that it
/// "flushes" (rewinds) when nearly full: the SSE encoder's work without the socket.
final class SSEWriter: Subscriber {
    typealias Input = Term
    typealias Failure = Never

    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 16)
    var offset = 0
    var flushedBytes = 0

    deinit {
        buffer.deallocate()
    }

    func receive(subscription: any Subscription) {
        subscription.request(.unlimited)
    }

    func receive(_ input: Term) -> Subscribers.Demand {
        write(index: input.index, value: input.value)
        return .none
    }

    func receive(completion: Subscribers.Completion<Never>) {}

    @inline(__always)
    func write(index: Int, value: BigUInt) {
        let index = BigUInt(UInt64(truncatingIfNeeded: index))
        let needed = 4 + index.decimalDigitCount + 7 + value.decimalDigitCount + 2
        if offset + needed > buffer.count {
            flushedBytes &+= offset
            offset = 0
        }
        put("id: ")
        offset += index.writeDecimal(into: UnsafeMutableRawBufferPointer(rebasing: buffer[offset...]))
        put("\ndata: ")
        offset += value.writeDecimal(into: UnsafeMutableRawBufferPointer(rebasing: buffer[offset...]))
        put("\n\n")
    }

    @inline(__always)
    private func put(_ text: StaticString) {
        let base = buffer.baseAddress.unsafelyUnwrapped + offset
        base.copyMemory(from: text.utf8Start, byteCount: text.utf8CodeUnitCount)
        offset += text.utf8CodeUnitCount
    }
}

// MARK: Harness

/// The calling thread's CPU time, in nanoseconds.
func threadCPUTime() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return Double(time.tv_sec) * 1e9 + Double(time.tv_nsec)
}

/// Runs `body` once to warm up, then five times; returns the median and minimum nanoseconds of CPU time.
func measure(_ body: () -> Int) -> (median: Double, minimum: Double, checksum: Int) {
    var checksum = body()
    var samples: [Double] = []
    for _ in 0..<5 {
        let before = threadCPUTime()
        checksum &+= body()
        samples.append(threadCPUTime() - before)
    }
    samples.sort()
    return (samples[2], samples[0], checksum)
}

func formatted(_ value: Double, decimals: Int = 2) -> String {
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let rounded = (value * scale).rounded() / scale
    var text = "\(rounded)"
    if let dot = text.firstIndex(of: ".") {
        let fraction = text[text.index(after: dot)...].count
        if fraction < decimals { text += String(repeating: "0", count: decimals - fraction) }
    }
    return text
}

@MainActor
func report(_ name: String, elements: Int, _ body: () -> Int) {
    guard selected(name) else { return }
    let result = measure(body)
    checksums &+= result.checksum
    let perElement = result.median / Double(elements)
    let padded = name.padding(toLength: 64, withPad: " ", startingAt: 0)
    print(
        "\(padded) \(formatted(perElement)) ns/element (min \(formatted(result.minimum / Double(elements)))),"
            + " \(formatted(1e3 / perElement, decimals: 1))M/s"
    )
}

@MainActor
func reportTime(_ name: String, _ body: () -> Int) {
    guard selected(name) else { return }
    let result = measure(body)
    checksums &+= result.checksum
    let padded = name.padding(toLength: 64, withPad: " ", startingAt: 0)
    print("\(padded) \(formatted(result.median / 1e6)) ms (min \(formatted(result.minimum / 1e6)))")
}

var checksums = 0

/// With arguments, only the benchmarks whose names contain one of them run (for profiling one at a time).
func selected(_ name: String) -> Bool {
    let filters = CommandLine.arguments.dropFirst()
    return filters.isEmpty || filters.contains { name.contains($0) }
}

extension String {
    fileprivate func padding(toLength length: Int, withPad pad: Character, startingAt: Int) -> String {
        count >= length ? self : self + String(repeating: pad, count: length - count)
    }
}

// MARK: Benchmarks

let naturalsCount = 20_000_000
let window = 4_096

print("Sequences benchmarks (median of 5 after a warm-up, thread CPU time)")

report("naturals, .unlimited", elements: naturalsCount) {
    let subscriber = UnlimitedCounter()
    Naturals(count: naturalsCount).subscribe(subscriber)
    return subscriber.checksum
}

report("naturals via SequencePublisher, .unlimited", elements: naturalsCount) {
    let subscriber = UnlimitedCounter()
    SequencePublisher(kind: .naturals, count: naturalsCount).subscribe(subscriber)
    return subscriber.checksum
}

report("naturals, windows of \(window) requested from outside receive", elements: naturalsCount) {
    let subscriber = WindowCounter()
    Naturals(count: naturalsCount).subscribe(subscriber)
    while let subscription = subscriber.subscription, !subscriber.finished {
        subscription.request(.max(window))
    }
    return subscriber.checksum
}

report("naturals, windows of \(window) requested inside receive", elements: naturalsCount) {
    let subscriber = ReentrantWindowCounter(window: window)
    Naturals(count: naturalsCount).subscribe(subscriber)
    return subscriber.checksum
}

report("naturals, windows of 1 requested inside receive", elements: naturalsCount / 10) {
    let subscriber = ReentrantWindowCounter(window: 1)
    Naturals(count: naturalsCount / 10).subscribe(subscriber)
    return subscriber.checksum
}

report("SSE encoding alone (id + data as decimal), no publisher", elements: naturalsCount) {
    let writer = SSEWriter()
    for index in 0..<naturalsCount {
        writer.write(index: index, value: BigUInt(UInt64(index)))
    }
    return writer.flushedBytes &+ writer.offset
}

report("naturals, .unlimited, SSE-encoded into a byte buffer", elements: naturalsCount) {
    let writer = SSEWriter()
    Naturals(count: naturalsCount).subscribe(writer)
    return writer.flushedBytes &+ writer.offset
}

report("naturals from 10^18 (two limbs), SSE-encoded", elements: naturalsCount / 4) {
    let writer = SSEWriter()
    Naturals(start: 1_000_000_000_000_000_000, count: naturalsCount / 4).subscribe(writer)
    return writer.flushedBytes &+ writer.offset
}

report("primes, first 2M, .unlimited", elements: 2_000_000) {
    let subscriber = UnlimitedCounter()
    Primes(count: 2_000_000).subscribe(subscriber)
    return subscriber.checksum
}

report("primes, first 2M, SSE-encoded", elements: 2_000_000) {
    let writer = SSEWriter()
    Primes(count: 2_000_000).subscribe(writer)
    return writer.flushedBytes &+ writer.offset
}

report("fibonacci, first 10,000, SSE-encoded (values up to 2,090 digits)", elements: 10_000) {
    let writer = SSEWriter()
    Fibonacci(count: 10_000).subscribe(writer)
    return writer.flushedBytes &+ writer.offset
}

report("factorial, first 2,000, .unlimited (values up to 5,736 digits)", elements: 2_000) {
    let subscriber = UnlimitedCounter()
    Factorial(count: 2_000).subscribe(subscriber)
    return subscriber.checksum
}

print("")
print("Reaching start (first element at SequenceKind.maxStart, or as noted)")
for kind in SequenceKind.allCases {
    reportTime("\(kind.rawValue), start = \(kind.maxStart)") {
        let subscriber = TakeOne()
        SequencePublisher(kind: kind, start: kind.maxStart, count: 1).subscribe(subscriber)
        return subscriber.digits
    }
}
reportTime("primes, start = 1,000,000") {
    let subscriber = TakeOne()
    Primes(start: 1_000_000, count: 1).subscribe(subscriber)
    return subscriber.digits
}

/// Takes one element and remembers its digit count.
final class TakeOne: Subscriber {
    typealias Input = Term
    typealias Failure = Never

    var digits = 0

    func receive(subscription: any Subscription) {
        subscription.request(.max(1))
    }

    func receive(_ input: Term) -> Subscribers.Demand {
        digits = input.value.decimalDigitCount
        return .none
    }

    func receive(completion: Subscribers.Completion<Never>) {}
}

print("")
print("checksum \(checksums)")
