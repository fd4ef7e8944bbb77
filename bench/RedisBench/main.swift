import Dispatch
import EventLoops
import Glibc
import RESP
import Reactive
import Redis
import Synchronization

// Pipelined round trips through one RedisConnection, to set beside `redis-benchmark -P <depth>` on the same server.
//
//     swift run -c release --package-path bench redis-bench <port> [commands] [depth ...]
//
// For each depth, `commands` commands (SET then GET of a 3-byte value, alternating, as redis-benchmark's `-t set,get`
// does) are sent with at most `depth` in flight: each reply sends the next command. Prints commands per second and
// the mean round trip the connection measured. Depth 1 is one command at a time.

let arguments = CommandLine.arguments
guard arguments.count >= 2, let port = Int(arguments[1]) else {
    print("usage: redis-bench <port> [commands] [depth ...]")
    exit(2)
}
let total = arguments.count >= 3 ? max(1, Int(arguments[2]) ?? 200_000) : 200_000
let depths = arguments.count >= 4 ? arguments[3...].compactMap { Int($0) }.map { max(1, $0) } : [1, 16, 128]

/// Counts the replies of one run and signals when all arrived.
final class Run: Sendable {
    let state = Mutex<(sent: Int, received: Int, failed: Int)>((0, 0, 0))
    let done = DispatchSemaphore(value: 0)
    let total: Int

    init(total: Int) {
        self.total = total
    }

    /// Claims the index of the next command to send, or nil when all are sent.
    func claim() -> Int? {
        state.withLock { state in
            guard state.sent < total else { return nil }
            state.sent += 1
            return state.sent - 1
        }
    }

    func replied(failed: Bool) {
        let finished = state.withLock { state -> Bool in
            state.received += 1
            if failed { state.failed += 1 }
            return state.received == total
        }
        if finished { done.signal() }
    }
}

let loop = EventLoop(label: "redis-bench")
let configuration = RedisConfiguration(url: RedisURL(host: "127.0.0.1", port: port), maxPendingCommands: 100_000)
let redis = RedisConnection(configuration: configuration, loop: loop)
redis.start()
let ready = DispatchSemaphore(value: 0)
let cancellable = redis.statusUpdates.sink { status in
    if status == .connected { ready.signal() }
}
guard ready.wait(timeout: .now() + 10) == .success else {
    print("could not connect to 127.0.0.1:\(port): \(redis.status)")
    exit(1)
}

/// Keeps `depth` commands in flight: each reply sends the next.
struct Sender: Sendable {
    let redis: RedisConnection

    func command(_ index: Int) -> RESPCommand {
        index % 2 == 0 ? RESPCommand("SET", "key:__rand_int__", "xxx") : RESPCommand("GET", "key:__rand_int__")
    }

    func sendNext(_ run: Run) {
        guard let index = run.claim() else { return }
        redis.send(command(index)) { result in
            if case .failure = result { run.replied(failed: true) } else { run.replied(failed: false) }
            self.sendNext(run)
        }
    }
}
let sender = Sender(redis: redis)

print("redis-bench: \(total) commands (SET/GET alternating) per depth, 127.0.0.1:\(port)")
for depth in depths {
    let run = Run(total: total)
    let before = redis.metrics
    let start = ContinuousClock.now
    for _ in 0..<min(depth, total) { sender.sendNext(run) }
    guard run.done.wait(timeout: .now() + 300) == .success else {
        print("depth \(depth): timed out")
        exit(1)
    }
    let elapsed = ContinuousClock.now - start
    let after = redis.metrics
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
    let rate = Double(total) / seconds
    let trips = after.roundTrips - before.roundTrips
    let meanMicroseconds =
        trips > 0
        ? Double((after.roundTripTotal - before.roundTripTotal).components.attoseconds) * 1e-12 / Double(trips)
            + Double((after.roundTripTotal - before.roundTripTotal).components.seconds) * 1e6 / Double(trips) : 0
    let failed = run.state.withLock { $0.failed }
    print(
        "depth \(depth): \(Int(rate)) commands/s, mean round trip \(Int(meanMicroseconds)) µs, failed \(failed)"
    )
}
withExtendedLifetime(cancellable) {}
redis.close()
