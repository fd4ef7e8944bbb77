import Dispatch
import EventLoops
import RESP
import Reactive
import Redis
import TestSupport
import Testing

/// Blocking waits on a ``RedisConnection`` for tests: every wait has a deadline (scaled by `TestTiming`) and
/// blocks the test's own thread (the suites run `.offPool`).
///
/// **Ownership:** Owned by one test; closes its connections in ``close()``.
/// **Thread safety:** Used from the test's thread; the callbacks it installs only touch `TestBox`es and signal.
final class RedisHarness {
    let loop: EventLoop
    private(set) var connections: [RedisConnection] = []
    private var cancellables: [AnyCancellable] = []

    init(label: String = "redis.test") {
        loop = EventLoop(label: label)
    }

    deinit {
        close()
    }

    /// A fast-reconnecting configuration for `port` (or any URL).
    static func configuration(
        port: Int,
        password: String? = nil,
        database: Int = 0,
        commandTimeout: Duration? = .seconds(5),
        connectTimeout: Duration = .seconds(5),
        maxReplyBytes: Int = 1 << 20,
        maxPendingCommands: Int = 10_000
    ) -> RedisConfiguration {
        RedisConfiguration(
            url: RedisURL(host: "127.0.0.1", port: port, password: password, database: database),
            clientName: "spout-redis-tests",
            commandTimeout: commandTimeout,
            connectTimeout: connectTimeout,
            maxPendingCommands: maxPendingCommands,
            maxReplyBytes: maxReplyBytes,
            reconnect: RESPReconnectPolicy(initialDelay: .milliseconds(20), maxDelay: .milliseconds(200))
        )
    }

    /// A started connection.
    func connect(_ configuration: RedisConfiguration, start: Bool = true) -> RedisConnection {
        let connection = RedisConnection(configuration: configuration, loop: loop, seed: 42)
        connections.append(connection)
        if start { connection.start() }
        return connection
    }

    /// A started connection, waited for until it is ready.
    func ready(_ configuration: RedisConfiguration) throws -> RedisConnection {
        let connection = connect(configuration)
        try waitForStatus(connection, "connected") { $0 == .connected }
        return connection
    }

    func close() {
        for connection in connections { connection.close() }
        connections = []
        cancellables = []
    }

    struct Timeout: Error, CustomStringConvertible {
        let what: String
        var description: String { "timed out waiting for \(what)" }
    }

    /// Waits until the connection's status satisfies `predicate`.
    func waitForStatus(
        _ connection: RedisConnection,
        _ what: String,
        timeout: Duration = .seconds(10),
        _ predicate: @escaping @Sendable (RedisConnectionStatus) -> Bool
    ) throws {
        let signal = TestSignal()
        let cancellable = connection.statusUpdates.sink { status in
            if predicate(status) { signal.signal() }
        }
        defer { cancellable.cancel() }
        if predicate(connection.status) { return }
        guard signal.wait(timeout: timeout) else {
            throw Timeout(what: "\(what) (status: \(connection.status))")
        }
    }

    /// The outcome of `command`.
    func result(_ connection: RedisConnection, _ command: RESPCommand, timeout: Duration = .seconds(10)) throws
        -> Result<RESPValue, RedisError>
    {
        try result(connection.send(command), timeout: timeout)
    }

    /// The reply to `command`; throws when it fails.
    func request(_ connection: RedisConnection, _ command: RESPCommand, timeout: Duration = .seconds(10)) throws
        -> RESPValue
    {
        try result(connection, command, timeout: timeout).get()
    }

    /// The outcome of a future.
    func result<T: Sendable>(_ future: Future<T, RedisError>, timeout: Duration = .seconds(10)) throws
        -> Result<T, RedisError>
    {
        let box = TestBox<Result<T, RedisError>?>(nil)
        let signal = TestSignal()
        let cancellable = future.sink(
            receiveCompletion: { completion in
                if case .failure(let error) = completion {
                    box.update { $0 = .failure(error) }
                    signal.signal()
                }
            },
            receiveValue: { value in
                box.update { $0 = .success(value) }
                signal.signal()
            }
        )
        defer { cancellable.cancel() }
        guard signal.wait(timeout: timeout), let result = box.value else { throw Timeout(what: "a reply") }
        return result
    }

    /// Collects the pushes of `connection` from now on.
    func collectPushes(_ connection: RedisConnection) -> (TestBox<[RESPPush]>, TestSignal) {
        let box = TestBox<[RESPPush]>([])
        let signal = TestSignal()
        cancellables.append(
            connection.pushes.sink { push in
                box.update { $0.append(push) }
                signal.signal()
            }
        )
        return (box, signal)
    }

    /// Waits until `box` holds `count` pushes.
    func waitForPushes(_ box: TestBox<[RESPPush]>, _ signal: TestSignal, count: Int) throws {
        for _ in 0..<1000 where box.value.count < count {
            guard signal.wait(timeout: .seconds(10)) else { throw Timeout(what: "\(count) pushes, got \(box.value)") }
        }
    }
}

extension String {
    var bytes: [UInt8] { Array(utf8) }
}
