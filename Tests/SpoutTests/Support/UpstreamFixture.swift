import Dispatch
import EventLoops
import Foundation
import HTTPServer
import Reactive
import Synchronization
import TestSupport

/// A scripted upstream on an ephemeral loopback port: the project's own `HTTPServer` answering each
/// request as a test's script says, with the faults the outbound client must survive.
///
///     let upstream = try UpstreamFixture { request in
///         request.attempt == 1 ? .status(500) : .json(#"{"id":1}"#)
///     }
///     defer { upstream.stop() }
///     // point an UpstreamClient (or SpoutConfiguration.upstream.baseURL) at upstream.baseURL
///     try await upstream.waitUntil("two requests") { $0.requests(to: "/posts/1") == 2 }
///
/// It counts requests per path (with the query) and the requests still in flight: received and not
/// yet answered in full, and whose client has not gone. A test that expects cancellation to reach the
/// upstream waits for `inFlight == 0`.
///
/// **Ownership:** the test owns it and calls ``stop()``.
///
/// **Thread safety:** safe to call from any thread; the script runs on the server's event loop.
final class UpstreamFixture: Sendable {
    /// One request as the script sees it.
    struct Received: Sendable {
        /// The path, e.g. `/posts/1`.
        let path: String
        /// The query items in order.
        let query: [(name: String, value: String)]
        /// Which request to this path and query this is, from 1.
        let attempt: Int
        /// The request's header fields in order, names as sent.
        let headers: [(name: String, value: String)]

        /// The value of query item `name`, if present.
        func query(_ name: String) -> String? { query.first { $0.name == name }?.value }

        /// The value of the first header field named `name` (case-insensitive), if present.
        func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }
    }

    /// How to answer one request.
    indirect enum Reply: Sendable {
        /// A response with `body` and, by default, `Content-Type: application/json`.
        case respond(status: Int, headers: [String: String], body: String)
        /// The same reply, after `delay` (the head goes out at once, the body after the delay).
        case delayed(Duration, Reply)
        /// The head goes out, then nothing until the client leaves.
        case hang
        /// The head and `partial` body bytes go out, then the connection closes mid-body.
        case resetMidBody(partial: String)
        /// Nothing goes out until `gate` opens; then `reply` does. For ordering a test's steps
        /// against the response without timing.
        case awaiting(Gate, Reply)
        /// A `200` with a chunked body (`Transfer-Encoding: chunked`, so the client cannot know its
        /// length): the head and `first` go out at once; once `gate` opens (at once when `nil`), each of
        /// `rest` as its own chunk, then the last chunk. A gate that never opens stalls the body mid-way.
        case chunked(first: String, rest: [String], gate: Gate?)
        /// A `200` whose chunked body never ends: `[` then 64 KiB of filler a millisecond while the client
        /// takes it, until the client leaves or `limit` bytes went out (a bound for the test, far beyond
        /// any client limit; then the connection is cut, never finished).
        case endless(limit: Int)
        /// A `200` with `Content-Length: bytes` and a body of that size (a JSON array of strings).
        case large(bytes: Int)
        /// A `200` whose head goes out at once and whose `body` follows one byte per `interval`.
        case trickle(body: String, interval: Duration)

        /// `200` with a JSON body.
        static func json(_ body: String, status: Int = 200, headers: [String: String] = [:]) -> Reply {
            .respond(status: status, headers: headers, body: body)
        }

        /// A bare status with a short JSON body.
        static func status(_ code: Int, headers: [String: String] = [:]) -> Reply {
            .respond(status: code, headers: headers, body: #"{"error":\#(code)}"#)
        }
    }

    /// Holds back ``Reply/awaiting(_:_:)`` replies until ``open()``.
    ///
    /// **Thread safety:** safe to call from any thread (a `Mutex`).
    final class Gate: Sendable {
        private let state = LockedState<(isOpen: Bool, waiting: [@Sendable () -> Void])>((false, []))

        init() {}

        /// Lets every held reply (and any later one) go out.
        func open() {
            let waiting = state.withLock { state in
                state.isOpen = true
                defer { state.waiting = [] }
                return state.waiting
            }
            for action in waiting { action() }
        }

        /// Runs `action` once the gate is open (at once if it is).
        fileprivate func whenOpen(_ action: @escaping @Sendable () -> Void) {
            let isOpen = state.withLock { state in
                if !state.isOpen { state.waiting.append(action) }
                return state.isOpen
            }
            if isOpen { action() }
        }
    }

    /// What the fixture has seen so far.
    struct Snapshot: Sendable {
        /// Requests received per path with query (`/posts?_page=1`), in arrival order of first sight.
        var counts: [String: Int] = [:]
        /// Every request received, in order, as path with query.
        var log: [String] = []
        /// Requests received and not yet answered in full whose client is still connected.
        var inFlight = 0
        /// The header fields of every request received, in the order of ``log``.
        var headers: [[(name: String, value: String)]] = []
        /// Body bytes handed to the kernel by ``Reply/endless(limit:)``, ``Reply/large(bytes:)`` and
        /// ``Reply/trickle(body:interval:)`` replies, all requests together.
        var bodyBytesSent = 0

        /// All requests received.
        var total: Int { log.count }

        /// Requests received for `pathAndQuery` (exact, query included when given).
        func requests(to pathAndQuery: String) -> Int { counts[pathAndQuery, default: 0] }

        /// Requests whose path (query ignored) is `path`.
        func requests(toPath path: String) -> Int {
            log.lazy.filter { $0 == path || $0.hasPrefix(path + "?") }.count
        }
    }

    private struct State {
        var snapshot = Snapshot()
        var waiters:
            [UInt64: (condition: @Sendable (Snapshot) -> Bool, continuation: CheckedContinuation<Bool, Never>)] = [:]
        var nextWaiter: UInt64 = 0
    }

    /// The counts and waiters, shared with the server's handler.
    private final class Ledger: Sendable {
        let state = LockedState(State())
    }

    private let server: Server
    private let ledger: Ledger

    /// The fixture's root, e.g. `http://127.0.0.1:PORT`.
    let baseURL: URL

    /// Starts the fixture; `script` decides each reply.
    init(script: @escaping @Sendable (Received) -> Reply) throws {
        let state = Ledger()
        self.ledger = state
        server = try Server.start(
            configuration: Server.Configuration(host: "127.0.0.1", port: 0),
            group: EventLoopGroup(loopCount: 1)
        ) { request, responder in
            let key = request.query.map { request.path + "?" + $0 } ?? request.path
            let headers = request.headers.map { (name: $0.name, value: $0.value) }
            let attempt = UpstreamFixture.record(key, headers: headers, in: state)
            let reply = script(
                Received(path: request.path, query: request.queryItems, attempt: attempt, headers: headers)
            )
            UpstreamFixture.answer(reply, responder: responder, state: state)
        }
        // An IP literal and a bound port: always a valid URL.
        baseURL = URL(string: "http://127.0.0.1:\(server.port)")!
    }

    /// The port the fixture listens on.
    var port: Int { server.port }

    /// What the fixture has seen so far.
    var snapshot: Snapshot { ledger.state.withLock { $0.snapshot } }

    /// Waits until `condition` holds for the fixture's counts; false if `timeout` passed first.
    /// Re-checked on every request received and every request that ends. `timeout` is scaled by `TestTiming`.
    @discardableResult
    func waitUntil(
        timeout: Duration = .seconds(60),
        _ condition: @escaping @Sendable (Snapshot) -> Bool
    ) async -> Bool {
        let ledger = self.ledger
        let id = ledger.state.withLock { state -> UInt64 in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        return await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let satisfied = ledger.state.withLock { state -> Bool in
                if condition(state.snapshot) { return true }
                state.waiters[id] = (condition, continuation)
                return false
            }
            if satisfied {
                continuation.resume(returning: true)
                return
            }
            DispatchQueue.global().asyncAfter(
                deadline: .now() + .nanoseconds(Int(TestTiming.scaled(timeout).nanoseconds))
            ) {
                let waiter = ledger.state.withLock { $0.waiters.removeValue(forKey: id) }
                waiter?.continuation.resume(returning: false)
            }
        }
    }

    /// Stops listening and closes open connections.
    func stop() {
        server.shutdown(deadline: .milliseconds(100))
    }

    /// Stops listening and closes open connections; returns once that is done, so nothing
    /// listens on ``port`` any more (for connection-refused tests).
    func stopAndWait() async {
        await server.shutdown(deadline: .milliseconds(100))
    }

    // MARK: Internals

    private static func record(_ key: String, headers: [(name: String, value: String)], in state: Ledger) -> Int {
        update(state) { snapshot in
            snapshot.counts[key, default: 0] += 1
            snapshot.log.append(key)
            snapshot.headers.append(headers)
            snapshot.inFlight += 1
            return snapshot.counts[key, default: 0]
        }
    }

    private static func ended(_ state: Ledger) {
        update(state) { $0.inFlight -= 1 }
    }

    private static func sent(_ bytes: Int, _ state: Ledger) {
        state.state.withLock { $0.snapshot.bodyBytesSent += bytes }
    }

    /// Changes the snapshot and wakes the waiters whose condition now holds (outside the lock).
    private static func update<R>(_ state: Ledger, _ change: (inout Snapshot) -> R) -> R {
        var woken: [CheckedContinuation<Bool, Never>] = []
        let result = state.state.withLock { state -> R in
            let result = change(&state.snapshot)
            for (id, waiter) in state.waiters where waiter.condition(state.snapshot) {
                woken.append(waiter.continuation)
                state.waiters[id] = nil
            }
            return result
        }
        for continuation in woken { continuation.resume(returning: true) }
        return result
    }

    private static func answer(_ reply: Reply, responder: Responder, state: Ledger) {
        switch reply {
        case .respond(let status, let headers, let body):
            responder.respond(status: Status(code: status), headers: Self.headers(headers), body: body)
            ended(state)
        case .delayed(let delay, let inner):
            let writer = responder.startStreaming(
                status: Status(code: inner.status),
                headers: Self.headers(inner.headers)
            )
            writer.onClose = { ended(state) }
            writer.loop.queue.asyncAfter(deadline: .now() + .nanoseconds(Int(delay.nanoseconds))) {
                switch inner {
                case .respond(_, _, let body):
                    writer.write(body)
                    writer.finish()
                case .resetMidBody(let partial):
                    writer.write(partial)
                    writer.abort()
                case .hang, .delayed, .awaiting, .chunked, .endless, .large, .trickle:
                    break  // stays open until the client leaves
                }
            }
        case .hang:
            let writer = responder.startStreaming(headers: ["Content-Type": "application/json"])
            writer.onClose = { ended(state) }
        case .awaiting(let gate, let inner):
            gate.whenOpen {
                responder.loop.execute { answer(inner, responder: responder, state: state) }
            }
        case .resetMidBody(let partial):
            let writer = responder.startStreaming(headers: ["Content-Type": "application/json"])
            writer.onClose = { ended(state) }
            writer.write(partial)
            writer.loop.execute { writer.abort() }
        case .chunked(let first, let rest, let gate):
            let writer = responder.startStreaming(headers: ["Content-Type": "application/json"])
            writer.onClose = { ended(state) }
            writer.write(first)
            let finish: @Sendable () -> Void = {
                writer.loop.execute {
                    for part in rest { writer.write(part) }
                    writer.finish()
                }
            }
            if let gate { gate.whenOpen(finish) } else { finish() }
        case .endless(let limit):
            let writer = responder.startStreaming(headers: ["Content-Type": "application/json"])
            writer.onClose = { ended(state) }
            writer.write("[")
            pour(Array(repeating: UInt8(ascii: "1"), count: 64 * 1024), remaining: limit, to: writer, state: state)
        case .large(let bytes):
            // Built by the standard library's own (optimized) initializer: a loop here, in a debug build,
            // took seconds for 10 MB.
            var body = [UInt8](repeating: UInt8(ascii: "x"), count: max(4, bytes))
            body[0] = UInt8(ascii: "[")
            body[1] = UInt8(ascii: "\"")
            body[body.count - 2] = UInt8(ascii: "\"")
            body[body.count - 1] = UInt8(ascii: "]")
            responder.respond(status: .ok, headers: ["Content-Type": "application/json"], body: body)
            sent(body.count, state)
            ended(state)
        case .trickle(let body, let interval):
            let writer = responder.startStreaming(headers: ["Content-Type": "application/json"])
            writer.onClose = { ended(state) }
            trickle(Array(body.utf8)[...], every: interval, to: writer, state: state)
        }
    }

    /// Writes `filler` once a millisecond while the client takes it (at most 64 MB/s: endless for any
    /// client limit, gentle with the cores the other tests share), until the client leaves or
    /// `remaining` bytes went out, when the connection is cut.
    private static func pour(_ filler: [UInt8], remaining: Int, to writer: BodyWriter, state: Ledger) {
        guard writer.isOpen else { return }
        guard writer.isWritable else {
            writer.onWritable = {
                writer.onWritable = nil  // one chain of writes at a time
                pour(filler, remaining: remaining, to: writer, state: state)
            }
            return
        }
        let size = min(remaining, filler.count)
        guard size > 0 else {
            writer.abort()
            return
        }
        filler.withUnsafeBytes { writer.write(UnsafeRawBufferPointer(rebasing: $0[0..<size])) }
        sent(size, state)
        writer.loop.queue.asyncAfter(deadline: .now() + .milliseconds(1)) {
            pour(filler, remaining: remaining - size, to: writer, state: state)
        }
    }

    /// Writes the first byte of `rest` after `interval`, then the next, until the body or the client ends.
    private static func trickle(
        _ rest: ArraySlice<UInt8>,
        every interval: Duration,
        to writer: BodyWriter,
        state: Ledger
    ) {
        writer.loop.queue.asyncAfter(deadline: .now() + .nanoseconds(Int(interval.nanoseconds))) {
            guard writer.isOpen else { return }
            guard let byte = rest.first else {
                writer.finish()
                return
            }
            writer.write([byte])
            sent(1, state)
            trickle(rest.dropFirst(), every: interval, to: writer, state: state)
        }
    }

    private static func headers(_ extra: [String: String]) -> Headers {
        var headers: Headers = ["Content-Type": "application/json"]
        for (name, value) in extra.sorted(by: { $0.key < $1.key }) {
            if name.lowercased() == "content-type" { headers.remove(name: "Content-Type") }
            headers.add(name: name, value: value)
        }
        return headers
    }
}

extension UpstreamFixture.Reply {
    fileprivate var status: Int {
        switch self {
        case .respond(let status, _, _): status
        case .delayed(_, let inner), .awaiting(_, let inner): inner.status
        case .hang, .resetMidBody, .chunked, .endless, .large, .trickle: 200
        }
    }

    fileprivate var headers: [String: String] {
        switch self {
        case .respond(_, let headers, _): headers
        case .delayed(_, let inner), .awaiting(_, let inner): inner.headers
        case .hang, .resetMidBody, .chunked, .endless, .large, .trickle: [:]
        }
    }
}

extension Duration {
    /// The duration in whole nanoseconds (saturating; tests use small values).
    fileprivate var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : whole &+ attoseconds / 1_000_000_000
    }
}
