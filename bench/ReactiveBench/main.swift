// Benchmarks for module Reactive: what one element costs through common pipelines.
// Run in release, both with and without cross-module optimization: `bench/reactive.sh`.
// Each figure is the median of 5 timed runs after one warm-up run (ContinuousClock, or the thread's CPU
// time with --cpu, for a busy machine), in ns per element.
// Every case checks its checksum or count against a plain loop and exits non-zero on mismatch.
// zip and flatMap also run at N/4 and N/2: with linear total cost, ns per element stays flat.

import Reactive

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// MARK: Harness

/// Accumulates results so the optimizer cannot drop the work.
final class Box {
    var value = 0
    var count = 0
}

@inline(never)
func blackHole<T>(_ value: T) {
    withExtendedLifetime(value) {}
}

@inline(never)
func opaque(_ n: Int) -> Int { n }

/// Nanoseconds of CPU time this thread has used: unlike the wall clock, it does not count the time
/// the thread waited for a core, so it stays meaningful on a machine that other work keeps busy.
/// Every case runs on the calling thread alone.
func threadCPUNanoseconds() -> Double {
    var spec = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &spec)
    return Double(spec.tv_sec) * 1e9 + Double(spec.tv_nsec)
}

/// Runs `body` once to warm up and 5 times timed; checks each result against `expected`.
/// Timed by the wall clock, or by this thread's CPU time with `--cpu`.
/// - Returns: The median time per element, in nanoseconds.
func measure(_ name: String, elements: Int, expected: Int, _ body: () -> Int) -> Double {
    let clock = ContinuousClock()
    var samples: [Double] = []
    for run in 0..<(profiling ? 2 : 6) {
        var result = 0
        let ns: Double
        if cpuTime {
            let start = threadCPUNanoseconds()
            result = body()
            ns = threadCPUNanoseconds() - start
        } else {
            let elapsed = clock.measure { result = body() }
            ns = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
        }
        if result != expected {
            print("\(name): MISMATCH got \(result), expected \(expected)")
            exit(1)
        }
        if run > 0 {
            samples.append(ns / Double(elements))
        }
    }
    samples.sort()
    return samples[samples.count / 2]
}

func report(_ name: String, _ ns: Double, target: Double?) {
    let figure = (ns * 100).rounded() / 100
    if let target {
        let mark = ns <= target ? "" : "  MISSED"
        print("\(name): \(figure) ns/element (target \(Int(target)))\(mark)")
    } else {
        print("\(name): \(figure) ns/element (baseline)")
    }
}

// MARK: 1. map → filter → scan → sink

/// Generic over the upstream, so no Sequence-specific shortcut applies.
@inline(never)
func chain<P: Publisher>(_ p: P) -> some Publisher<Int, Never> where P.Output == Int, P.Failure == Never {
    p.map { $0 &* 3 }
        .filter { $0 & 1 == 0 }
        .scan(0) { $0 &+ $1 }
}

/// Generic pass-through, to hide the concrete upstream type from the call site.
@inline(never)
func erased<P: Publisher>(_ p: P) -> P { p }

@inline(never)
func runChain(_ n: Int) -> Int {
    let box = Box()
    let cancellable = chain(erased((0..<n).publisher)).sink { box.value &+= $0 }
    blackHole(cancellable)
    return box.value
}

@inline(never)
func plainChain(_ n: Int) -> Int {
    var acc = 0
    var checksum = 0
    for i in 0..<n {
        let m = i &* 3
        if m & 1 == 0 {
            acc &+= m
            checksum &+= acc
        }
    }
    return checksum
}

/// The same chain as a user writes it in a function generic over its upstream (issue 27's shape):
/// built and subscribed inside the generic function, which the caller hands a sequence publisher.
@inline(never)
func runGeneric<P: Publisher>(_ p: P) -> Int where P.Output == Int, P.Failure == Never {
    let box = Box()
    let cancellable = p.map { $0 &* 3 }
        .filter { $0 & 1 == 0 }
        .scan(0) { $0 &+ $1 }
        .sink { box.value &+= $0 }
    blackHole(cancellable)
    return box.value
}

// MARK: Operators on the shared inner subscriptions

/// A value through each shared inner subscription the operators configure: `tryFilter`, `dropFirst`,
/// `prefix(while:)` and `collect(4)` (ForwardingInner, the last three with a demand policy or a
/// predicate), `mapError` (FailureConvertingSubscriber), `catch` (SequentialSubscription) and
/// `replaceEmpty` (ReplacingInner).
@inline(never)
func runSharedInners(_ n: Int) -> Int {
    let box = Box()
    let cancellable = erased((0..<n).publisher)
        .tryFilter { $0 >= 0 }
        .dropFirst(1)
        .prefix { $0 < Int.max }
        .collect(4)
        .mapError { $0 }
        .catch { _ in Empty<[Int], Never>() }
        .replaceEmpty(with: [])
        .sink { box.value &+= $0.reduce(0, &+) }
    blackHole(cancellable)
    return box.value
}

@inline(never)
func plainSharedInners(_ n: Int) -> Int {
    var sum = 0
    for i in 1..<max(n, 1) { sum &+= i }
    return sum
}

// MARK: 2. PassthroughSubject → map → sink

@inline(never)
func runSubject(_ n: Int) -> Int {
    let subject = PassthroughSubject<Int, Never>()
    let box = Box()
    let cancellable = subject.map { $0 &* 3 }.sink { box.value &+= $0 }
    for i in 0..<n {
        subject.send(i)
    }
    subject.send(completion: .finished)
    blackHole(cancellable)
    return box.value
}

/// The same, with the sink closure adding into a captured local `var` (issue 27's shape): the
/// variable lives in a heap box that the closure's context holds.
@inline(never)
func runSubjectCapturedVar(_ n: Int) -> Int {
    let subject = PassthroughSubject<Int, Never>()
    var sum = 0
    let cancellable = subject.map { $0 &* 3 }.sink { sum &+= $0 }
    for i in 0..<n {
        subject.send(i)
    }
    subject.send(completion: .finished)
    blackHole(cancellable)
    return sum
}

@inline(never)
func plainSubject(_ n: Int) -> Int {
    var checksum = 0
    for i in 0..<n { checksum &+= i &* 3 }
    return checksum
}

// MARK: 3. Demand-tracking Fibonacci publisher, one element at a time

struct FibonacciPublisher: Publisher {
    typealias Output = Int
    typealias Failure = Never

    let count: Int

    func receive<S: Subscriber>(subscriber: S) where S.Input == Int, S.Failure == Never {
        subscriber.receive(subscription: FibonacciSubscription(subscriber: subscriber, count: count))
    }
}

final class FibonacciSubscription<S: Subscriber>: Subscription where S.Input == Int, S.Failure == Never {
    private var subscriber: S?
    private let count: Int
    private var emitted = 0
    private var a = 0
    private var b = 1
    private var demand = Subscribers.Demand.none
    private var inLoop = false

    init(subscriber: S, count: Int) {
        self.subscriber = subscriber
        self.count = count
    }

    func request(_ more: Subscribers.Demand) {
        demand += more
        // A re-entrant request (from receive) only adds demand; the running loop uses it.
        guard !inLoop else { return }
        inLoop = true
        defer { inLoop = false }
        while demand > 0, let subscriber {
            if emitted == count {
                self.subscriber = nil
                subscriber.receive(completion: .finished)
                return
            }
            let value = a
            (a, b) = (b, a &+ b)
            emitted += 1
            demand -= 1
            demand += subscriber.receive(value)
        }
        if emitted == count, let subscriber {
            self.subscriber = nil
            subscriber.receive(completion: .finished)
        }
    }

    func cancel() { subscriber = nil }
}

final class OneAtATimeSubscriber: Subscriber {
    typealias Input = Int
    typealias Failure = Never

    var checksum = 0
    var received = 0
    var finished = false

    func receive(subscription: any Subscription) {
        subscription.request(.max(1))
    }

    func receive(_ input: Int) -> Subscribers.Demand {
        checksum &+= input
        received += 1
        return .max(1)
    }

    func receive(completion: Subscribers.Completion<Never>) { finished = true }
}

@inline(never)
func runFibonacci(_ n: Int) -> Int {
    let subscriber = OneAtATimeSubscriber()
    FibonacciPublisher(count: n).subscribe(subscriber)
    guard subscriber.finished, subscriber.received == n else { return -1 }
    return subscriber.checksum
}

@inline(never)
func plainFibonacci(_ n: Int) -> Int {
    var (a, b, checksum) = (0, 1, 0)
    for _ in 0..<n {
        checksum &+= a
        (a, b) = (b, a &+ b)
    }
    return checksum
}

// MARK: 4. zip of two sequence publishers

@inline(never)
func runZip(_ n: Int) -> Int {
    let box = Box()
    let cancellable = erased((0..<n).publisher).zip(erased((0..<n).publisher))
        .sink {
            box.value &+= $0.0 &* 2 &+ $0.1; box.count += 1
        }
    blackHole(cancellable)
    return box.count == n ? box.value : -1
}

/// zip of a sequence publisher with a mapped one, written at the call site (issue 27's shape): the
/// second side's `map` is the sequence publisher's own specialization.
@inline(never)
func runZipMapped(_ n: Int) -> Int {
    let box = Box()
    let cancellable = (0..<n).publisher.zip((0..<n).publisher.map { $0 &* 2 })
        .sink {
            box.value &+= $0.0 &+ $0.1; box.count += 1
        }
    blackHole(cancellable)
    return box.count == n ? box.value : -1
}

@inline(never)
func plainZip(_ n: Int) -> Int {
    var checksum = 0
    for i in 0..<n { checksum &+= i &* 2 &+ i }
    return checksum
}

// MARK: 5. flatMap over Justs

@inline(never)
func runFlatMap(_ n: Int) -> Int {
    let box = Box()
    let cancellable = erased((0..<n).publisher).flatMap { Just($0 &* 3) }
        .sink {
            box.value &+= $0; box.count += 1
        }
    blackHole(cancellable)
    return box.count == n ? box.value : -1
}

/// The same over `Optional.Publisher`s: the general child path (a child subscriber, reused once
/// its publisher lets go of it, and a subscription per element), which `flatMap` does not shortcut
/// as it does `Just`s.
@inline(never)
func runFlatMapOptional(_ n: Int) -> Int {
    let box = Box()
    let cancellable = erased((0..<n).publisher).flatMap { Optional($0 &* 3).publisher }
        .sink {
            box.value &+= $0; box.count += 1
        }
    blackHole(cancellable)
    return box.count == n ? box.value : -1
}

// MARK: Main

// `reactive-bench [case...]` runs only the named cases (chain, generic-chain, subject, subject-var,
// fibonacci, zip, zip-mapped, flatmap, flatmap-optional, shared-inners, plain); with no case it runs all of them. `--profile` (for callgrind or perf) runs each case once after
// the warm-up, at a tenth of its size: its figures are not the benchmark's.
let profiling = CommandLine.arguments.contains("--profile")
let cpuTime = CommandLine.arguments.contains("--cpu")
let selected = Set(CommandLine.arguments.dropFirst().filter { $0 != "--profile" && $0 != "--cpu" })
func wanted(_ name: String) -> Bool { selected.isEmpty || selected.contains(name) }

let scale = profiling ? 10 : 1
let big = opaque(10_000_000 / scale)
let fibN = opaque(1_000_000 / scale)
let zipN = opaque(1_000_000 / scale)
let flatN = opaque(100_000 / scale)
let sharedN = opaque(1_000_000 / scale)

/// Measures a case at N/4, N/2 and N, reports each, and flags a cost per element that grows
/// by more than half from N/4 to N (linear total cost keeps it flat).
func measureGrowth(_ name: String, n: Int, target: Double?, expected: (Int) -> Int, _ body: @escaping (Int) -> Int) {
    var figures: [Double] = []
    for size in [n / 4, n / 2, n] {
        let size = opaque(size)
        let ns = measure("\(name) \(size)", elements: size, expected: expected(size)) { body(size) }
        report("\(name) (\(size))", ns, target: target)
        figures.append(ns)
    }
    let growth = ((figures[2] / figures[0]) * 100).rounded() / 100
    print("\(name): ns/element at N over N/4 = \(growth)\(growth > 1.5 ? "  NOT LINEAR" : "")")
}

if wanted("chain") {
    let chainNs = measure("map-filter-scan-sink", elements: big, expected: plainChain(big)) { runChain(big) }
    report("map-filter-scan-sink (10M)", chainNs, target: 20)
}

if wanted("generic-chain") {
    let ns = measure("generic-map-filter-scan-sink", elements: big, expected: plainChain(big)) {
        runGeneric((0..<big).publisher)
    }
    report("(0..<n).publisher.map.filter.scan.sink through a generic function (10M)", ns, target: 10)
}

if wanted("subject") {
    let subjectNs = measure("passthrough-map-sink", elements: big, expected: plainSubject(big)) { runSubject(big) }
    report("PassthroughSubject-map-sink (10M)", subjectNs, target: 30)
}

if wanted("subject-var") {
    let ns = measure("passthrough-map-sink-var", elements: big, expected: plainSubject(big)) {
        runSubjectCapturedVar(big)
    }
    report("PassthroughSubject-map-sink into a captured var (10M)", ns, target: 30)
}

if wanted("fibonacci") {
    let fibNs = measure("fibonacci-max1", elements: fibN, expected: plainFibonacci(fibN)) { runFibonacci(fibN) }
    report("fibonacci custom publisher, .max(1) demand (1M)", fibNs, target: 2)
}

if wanted("zip") {
    measureGrowth("zip two sequences", n: zipN, target: 100, expected: plainZip) { runZip($0) }
}

if wanted("zip-mapped") {
    measureGrowth("zip sequence with mapped sequence", n: zipN, target: 100, expected: plainZip) { runZipMapped($0) }
}

if wanted("flatmap") {
    measureGrowth("flatMap over Just", n: flatN, target: 50, expected: plainSubject) { runFlatMap($0) }
}

if wanted("flatmap-optional") {
    measureGrowth("flatMap over Optional.Publisher", n: flatN, target: 300, expected: plainSubject) {
        runFlatMapOptional($0)
    }
}

if wanted("shared-inners") {
    let ns = measure("shared-inners", elements: sharedN, expected: plainSharedInners(sharedN)) {
        runSharedInners(sharedN)
    }
    report("tryFilter.dropFirst.prefix(while:).collect(4).mapError.catch.replaceEmpty.sink (1M)", ns, target: nil)
}

if wanted("plain") {
    let plainNs = measure("plain loop", elements: big, expected: plainChain(big)) { plainChain(big) }
    report("plain Swift loop, chain arithmetic (10M)", plainNs, target: nil)
}
