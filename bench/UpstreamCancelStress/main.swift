// Stress for the cancel race in FoundationNetworking (Linux): thousands of data tasks against a raw-socket
// server on 127.0.0.1, each cancelled at a random moment (from its start to past the end of its body), with
// Content-Length, chunked and close-delimited bodies. A cancel that lands while a task starts can trap inside
// FoundationNetworking ("Trying to access a behaviour for a task that in not in the registry"), killing the
// process, so the work runs in child processes and the driver counts the children that died of a signal.
//
//     swift run -c release --package-path bench upstream-cancel-stress --runs 10 --iterations 2000 --lanes 1 --anchor subscribe \
//         --max-delay-us 300 [--no-cache] [--path publisher|direct]
//
// --path publisher (default): ReactiveNetworking's `URLSession.dataTaskPublisher`, cancelled with `AnyCancellable.cancel()`.
// --path direct: a bare `URLSessionDataTask.cancel()`, the peer that shows the race in the same run.
//   (direct-registered, direct-after-head: the experiments that ruled out a registry-insert race and
//   tried cancelling only after the head; see URLSessionTask+SafeCancel.swift.)
// --no-cache: the session has no URLCache (as Spout's upstream client's); without it the session has
//   `.ephemeral`'s memory cache, where the trap happens.
// --anchor subscribe: the delay (0...--max-delay-us) runs from the subscription and the server answers
//   at once; release: from letting the server send the second half of the body.
// --lanes: threads running iterations side by side; --trace: one stderr line per cancel and completion
//   (the lines before a trap, kept with --crash-log PATH as PATH.runN, show where the cancels landed).
// Each child is bounded in iterations and in time (--seconds, a watchdog); every wait has a deadline.

import Dispatch
import Foundation
import Glibc
import Reactive
import ReactiveNetworking

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

struct Options {
    var child = false
    var runs = 10
    var iterations = 2000
    var lanes = 4
    var maxDelayMicros = 400
    var seconds = 120
    var seed: UInt64 = 1
    var path = "publisher"
    var crashLog: String?
    /// `release`: the delay runs from the moment the server is let go to send the rest of the body;
    /// `subscribe`: from the subscription (the server sends at once), so cancels also land before
    /// `resume()`, during connect and mid-body.
    var anchor = "release"
    /// Writes one line per cancel to stderr (task state and bytes at the cancel), so the lines before a
    /// trap show where the trapping cancels landed.
    var trace = false
    /// `configuration.urlCache = nil` for the session (no cache lookup when a task's protocol is made).
    var noCache = false

    init(_ arguments: [String]) {
        var index = 1
        func value() -> String {
            index += 1
            guard index < arguments.count else { fatalError("missing value after \(arguments[index - 1])") }
            return arguments[index]
        }
        while index < arguments.count {
            switch arguments[index] {
            case "--child": child = true
            case "--runs": runs = Int(value()) ?? runs
            case "--iterations": iterations = Int(value()) ?? iterations
            case "--lanes": lanes = max(1, Int(value()) ?? lanes)
            case "--max-delay-us": maxDelayMicros = max(0, Int(value()) ?? maxDelayMicros)
            case "--seconds": seconds = max(1, Int(value()) ?? seconds)
            case "--seed": seed = UInt64(value()) ?? seed
            case "--path": path = value()
            case "--crash-log": crashLog = value()
            case "--anchor": anchor = value()
            case "--trace": trace = true
            case "--no-cache": noCache = true
            default: fatalError("unknown argument \(arguments[index])")
            }
            index += 1
        }
    }

    var childArguments: [String] {
        [
            "--child", "--iterations", "\(iterations)", "--lanes", "\(lanes)", "--max-delay-us", "\(maxDelayMicros)",
            "--seconds", "\(seconds)", "--path", path, "--anchor", anchor,
        ] + (trace ? ["--trace"] : []) + (noCache ? ["--no-cache"] : [])
    }
}

/// SplitMix64: a seeded generator, so a run can be repeated.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Counts of one child run. // Guarded by lock.
final class Tally: @unchecked Sendable {
    // @unchecked: every field is read and written under `lock`.
    let lock = NSLock()
    var iterations = 0
    var finishedBeforeCancel = 0
    var cancelledFirst = 0
    var lateValues = 0
    var valuesDuringCancel = 0
    var stalls = 0
    var directData = 0
    var directCancelled = 0
    var directOther = 0
    var outstanding = 0
}

/// One iteration's outcome as the subscriber sees it. // Guarded by lock.
final class Outcome: @unchecked Sendable {
    // @unchecked: `cancelled` and `valueSeen` are read and written under `lock`.
    let lock = NSLock()
    var cancelStarted = false
    var cancelReturned = false
    var valueSeen = false
}

func spin(micros: Int) {
    let end = DispatchTime.now().uptimeNanoseconds + UInt64(micros) * 1000
    while DispatchTime.now().uptimeNanoseconds < end {}
}

func runChild(_ options: Options) -> Int32 {
    let deadline = DispatchTime.now() + .seconds(options.seconds)
    DispatchQueue.global().asyncAfter(deadline: deadline) {
        print("watchdog: child exceeded \(options.seconds) s")
        exit(3)
    }
    let server: StressServer
    do { server = try StressServer() } catch {
        print("server: \(error)")
        return 2
    }
    let configuration = URLSessionConfiguration.ephemeral
    configuration.timeoutIntervalForRequest = 10
    configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
    if options.noCache { configuration.urlCache = nil }
    let session = URLSession(configuration: configuration)
    let tally = Tally()
    let perLane = (options.iterations + options.lanes - 1) / options.lanes
    let group = DispatchGroup()
    for lane in 0..<options.lanes {
        group.enter()
        let thread = Thread {
            defer { group.leave() }
            var random = SplitMix(state: options.seed &* 1_000_003 &+ UInt64(lane))
            for iteration in 0..<perLane {
                let id = lane * 10_000_000 + iteration
                let framing = BodyFraming.allCases.randomElement(using: &random)!
                let size = Int.random(in: 2...8192, using: &random)
                let delay = Int.random(in: 0...options.maxDelayMicros, using: &random)
                let exchange = Exchange()
                server.register(id, exchange)
                let url = URL(string: "http://127.0.0.1:\(server.port)/\(id)/\(framing.rawValue)/\(size)")!
                let cancel: () -> Void
                if options.path.hasPrefix("direct") {
                    tally.lock.withLock { tally.outstanding += 1 }
                    let task = session.dataTask(with: url) { data, _, error in
                        if options.trace {
                            let outcome = error.map { "\($0)".prefix(40) } ?? "data \(data?.count ?? -1)"
                            FileHandle.standardError.write(Data("handler id=\(id) \(outcome)\n".utf8))
                        }
                        tally.lock.withLock {
                            tally.outstanding -= 1
                            if (error as? URLError)?.code == .cancelled {
                                tally.directCancelled += 1
                            } else if error == nil, data?.count == size {
                                tally.directData += 1
                            } else {
                                tally.directOther += 1
                            }
                        }
                    }
                    task.resume()
                    cancel = {
                        if options.trace {
                            let line =
                                "cancel id=\(id) \(framing.rawValue) state=\(task.state.rawValue)"
                                + " response=\(task.response != nil) received=\(task.countOfBytesReceived)"
                                + " expected=\(task.countOfBytesExpectedToReceive) size=\(size)\n"
                            FileHandle.standardError.write(Data(line.utf8))
                        }
                        switch options.path {
                        case "direct-registered":
                            // Experiment: the session's work queue has run everything enqueued before
                            // (the registry insert) when getAllTasks answers; then cancel from this thread.
                            let answered = DispatchSemaphore(value: 0)
                            session.getAllTasks { _ in answered.signal() }
                            _ = answered.wait(timeout: .now() + .seconds(10))
                            task.cancel()
                        case "direct-after-head":
                            // Experiment: cancel only once the response head has arrived (bounded wait).
                            let end = DispatchTime.now().uptimeNanoseconds + 200_000_000
                            while task.response == nil && DispatchTime.now().uptimeNanoseconds < end {}
                            if task.response != nil { task.cancel() } else { tally.lock.withLock { tally.stalls += 1 } }
                        default:
                            task.cancel()
                        }
                        if options.trace { FileHandle.standardError.write(Data("cancelled id=\(id)\n".utf8)) }
                    }
                } else {
                    let outcome = Outcome()
                    let cancellable = session.dataTaskPublisher(for: url).sink(
                        receiveCompletion: { _ in },
                        receiveValue: { _ in
                            let (started, returned) = outcome.lock.withLock {
                                outcome.valueSeen = true
                                return (outcome.cancelStarted, outcome.cancelReturned)
                            }
                            tally.lock.withLock {
                                if returned {
                                    tally.lateValues += 1
                                } else if started {
                                    tally.valuesDuringCancel += 1
                                } else {
                                    tally.finishedBeforeCancel += 1
                                }
                            }
                        }
                    )
                    cancel = {
                        let seen = outcome.lock.withLock {
                            outcome.cancelStarted = true
                            return outcome.valueSeen
                        }
                        cancellable.cancel()
                        outcome.lock.withLock { outcome.cancelReturned = true }
                        if !seen { tally.lock.withLock { tally.cancelledFirst += 1 } }
                    }
                }
                if options.anchor == "subscribe" {
                    exchange.release.signal()
                } else {
                    if exchange.headSent.wait(timeout: .now() + .seconds(10)) == .timedOut {
                        tally.lock.withLock { tally.stalls += 1 }
                    }
                    exchange.release.signal()
                }
                spin(micros: delay)
                cancel()
                server.unregister(id)
                tally.lock.withLock { tally.iterations += 1 }
            }
        }
        thread.start()
    }
    group.wait()
    // Let the last completions and registry removals run: wait (bounded) until the session holds no task.
    let drainEnd = DispatchTime.now() + .seconds(10)
    while DispatchTime.now() < drainEnd {
        let done = DispatchSemaphore(value: 0)
        let count = LockedCount()
        session.getAllTasks { tasks in
            count.set(tasks.count)
            done.signal()
        }
        _ = done.wait(timeout: .now() + .seconds(1))
        let pending = tally.lock.withLock { tally.outstanding }
        if count.get() == 0 && pending == 0 { break }
        usleep(1000)
    }
    tally.lock.withLock {
        print(
            "iterations=\(tally.iterations) finishedBeforeCancel=\(tally.finishedBeforeCancel)"
                + " cancelledFirst=\(tally.cancelledFirst) lateValues=\(tally.lateValues)"
                + " valuesDuringCancel=\(tally.valuesDuringCancel) stalls=\(tally.stalls)"
                + " directData=\(tally.directData) directCancelled=\(tally.directCancelled)"
                + " directOther=\(tally.directOther)"
        )
    }
    fflush(nil)
    return 0
}

final class LockedData: @unchecked Sendable {
    // @unchecked: `value` is guarded by `lock`.
    private let lock = NSLock()
    private var value = Data()
    func set(_ new: Data) { lock.withLock { value = new } }
    func get() -> Data { lock.withLock { value } }
}

final class LockedCount: @unchecked Sendable {
    // @unchecked: `value` is guarded by `lock`.
    private let lock = NSLock()
    private var value = -1
    func set(_ new: Int) { lock.withLock { value = new } }
    func get() -> Int { lock.withLock { value } }
}

func runDriver(_ options: Options) -> Int32 {
    let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    var traps = 0
    var registryTraps = 0
    var otherFailures = 0
    var totals: [String: Int] = [:]
    var trapMessages: [String: Int] = [:]
    let started = DispatchTime.now()
    print(
        "path=\(options.path) runs=\(options.runs) iterations/run=\(options.iterations) lanes=\(options.lanes)"
            + " max-delay-us=\(options.maxDelayMicros) anchor=\(options.anchor)"
    )
    for run in 0..<options.runs {
        let process = Process()
        process.executableURL = executable
        process.arguments = options.childArguments + ["--seed", "\(options.seed &+ UInt64(run))"]
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        do { try process.run() } catch {
            print("run \(run): cannot start child: \(error)")
            return 2
        }
        // Both pipes drained at once, so a child writing much to one cannot block on the other.
        let errBox = LockedData()
        let errRead = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            errBox.set(err.fileHandleForReading.readDataToEndOfFile())
            errRead.signal()
        }
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        errRead.wait()
        let errData = errBox.get()
        process.waitUntilExit()
        let output = String(decoding: outData, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        let errors = String(decoding: errData, as: UTF8.self)
        var line = "run \(run): "
        if process.terminationReason == .uncaughtSignal {
            traps += 1
            let registry = errors.contains("not in the registry")
            if registry { registryTraps += 1 }
            let message = errors.split(separator: "\n").first { $0.contains("Fatal error") }.map {
                String($0.split(separator: "Fatal error: ").last ?? "")
            }
            if let message { trapMessages[message, default: 0] += 1 }
            line += "TRAP signal \(process.terminationStatus)" + (message.map { ": " + $0 } ?? "")
            if let path = options.crashLog {
                try? errData.write(to: URL(fileURLWithPath: "\(path).run\(run)"))
            }
            if !registry { line += " stderr: " + String(errors.prefix(300)) }
        } else if process.terminationStatus != 0 {
            otherFailures += 1
            line += "exit \(process.terminationStatus) \(output) \(errors.prefix(300))"
        } else {
            line += output
            for field in output.split(separator: " ") {
                let pair = field.split(separator: "=")
                if pair.count == 2, let number = Int(pair[1]) { totals[String(pair[0]), default: 0] += number }
            }
        }
        print(line)
        fflush(nil)
    }
    let seconds = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9
    let summary = totals.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
    print(
        "total: runs=\(options.runs) traps=\(traps) (registry \(registryTraps)) otherFailures=\(otherFailures)"
            + " seconds=\(String(format: "%.1f", seconds)) | completed runs: \(summary)"
    )
    for (message, count) in trapMessages.sorted(by: { $0.key < $1.key }) { print("  \(count)x \(message)") }
    return traps == 0 && otherFailures == 0 ? 0 : 1
}

let options = Options(CommandLine.arguments)
exit(options.child ? runChild(options) : runDriver(options))
