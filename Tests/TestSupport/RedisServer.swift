import Dispatch
import Foundation
import Glibc
import Reactive
import Synchronization

/// A throwaway `redis-server` for one test: a free loopback port, a temporary directory, no persistence.
///
///     let server = try RedisServer.start()
///     defer { server.stop() }
///
/// The port is found by binding port 0 and closing it (redis-server cannot take port 0); when another process takes
/// it in between, redis-server fails to bind, which ``start(arguments:timeout:)`` sees in its log and retries on a
/// new port. Start-up is awaited by reading the server's log until it says it accepts connections, each read with a
/// deadline. ``stop()`` kills the server with SIGKILL, reaps it and removes the directory; `deinit` does too.
///
/// **Ownership:** The test owns it and stops it (``stop()`` is idempotent).
/// **Thread safety:** Not thread-safe; used by one test. The log reader thread touches only `log`, which a `Mutex`
/// guards.
public final class RedisServer {
    public enum Failure: Error, CustomStringConvertible {
        case notFound
        case exited(log: String)
        case timedOut(log: String)
        case noFreePort
        case commandFailed(command: String, reply: String)

        public var description: String {
            switch self {
            case .notFound:
                return "redis-server not found on PATH (install Debian's redis-server, or set SPOUT_REDIS_SERVER)"
            case .exited(let log):
                return "redis-server exited during start-up; its log ends with:\n\(log)"
            case .timedOut(let log):
                return "redis-server did not start in time; its log ends with:\n\(log)"
            case .noFreePort:
                return "no free loopback port for redis-server"
            case .commandFailed(let command, let reply):
                return "redis-server answered \(command) with \"\(reply)\""
            }
        }
    }

    /// `SPOUT_REDIS_SERVER`, else `redis-server` on `PATH`.
    public static var executablePath: String? {
        let environment = ProcessInfo.processInfo.environment
        if let path = environment["SPOUT_REDIS_SERVER"], !path.isEmpty {
            return FileManager.default.isExecutableFile(atPath: path) ? path : nil
        }
        for directory in (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let path = "\(directory)/redis-server"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    /// Whether Redis tests must run and fail rather than be skipped (CI sets `SPOUT_REQUIRE_REDIS=1`).
    public static var isRequired: Bool {
        let value = ProcessInfo.processInfo.environment["SPOUT_REQUIRE_REDIS"] ?? ""
        return !value.isEmpty && value != "0"
    }

    /// Whether the Redis tests run: when redis-server is installed, or when they are required.
    public static var testsEnabled: Bool { isRequired || executablePath != nil }

    public let port: Int
    public let directory: URL
    private let process: ChildProcess
    private let log = LogBuffer()
    private let logged = DispatchSemaphore(value: 0)
    private var stopped = false

    /// What the server wrote, and whether its end of the pipe is closed.
    private struct Log {
        var bytes: [UInt8] = []
        var ended = false
    }

    /// The log, shared with the thread that reads it. Thread safety: a `Mutex`.
    private final class LogBuffer: Sendable {
        let state = LockedState(Log())
        func withLock<T>(_ body: (inout Log) -> T) -> T { state.withLock { body(&$0) } }
    }

    /// The extra arguments it was started with, for ``restarted(timeout:)``.
    private var arguments: [String] = []
    /// Whether ``kill(keepingData:)`` left its directory (and the dump in it) for ``restarted(timeout:)``.
    private var keptData = false

    private init(port: Int, directory: URL, process: ChildProcess) {
        self.port = port
        self.directory = directory
        self.process = process
    }

    deinit {
        stop()
    }

    /// Starts a server with `arguments` added to the defaults, on a free port (retrying on a collision).
    /// - Parameter port: A fixed port instead (a restart on the port a client knows); not retried.
    /// - Parameter directory: An existing directory to run in (a restart that loads the dump a killed server left
    ///   there, see ``restarted(timeout:)``); `nil` makes a new one.
    public static func start(
        arguments: [String] = [],
        port fixedPort: Int? = nil,
        directory: URL? = nil,
        timeout: Duration = .seconds(10)
    ) throws -> RedisServer {
        guard let executable = executablePath else { throw Failure.notFound }
        for _ in 0..<5 {
            guard let port = fixedPort ?? freePort() else { throw Failure.noFreePort }
            let server = try launch(executable, port: port, arguments: arguments, directory: directory)
            switch server.waitUntilReady(timeout: timeout) {
            case .ready:
                server.arguments = arguments
                return server
            case .portTaken where fixedPort == nil:
                server.stop()
                continue
            case .portTaken, .exited:
                let text = server.logText
                server.stop()
                throw Failure.exited(log: text)
            case .timedOut:
                let text = server.logText
                server.stop()
                throw Failure.timedOut(log: text)
            }
        }
        throw Failure.noFreePort
    }

    /// Kills the server (SIGKILL: nothing to save), reaps it and removes its directory. Idempotent.
    /// After ``kill(keepingData:)`` with the data kept and no ``restarted(timeout:)``, removes the directory.
    public func stop() {
        if stopped {
            if keptData {
                keptData = false
                try? FileManager.default.removeItem(at: directory)
            }
            return
        }
        stopped = true
        process.kill()
        try? FileManager.default.removeItem(at: directory)
    }

    /// The TLS port of a server started with ``startTLS(certificateFile:privateKeyFile:caFile:authClients:arguments:)``
    /// (kept by ``restarted(timeout:)``), nil for a plain one.
    public var tlsPort: Int? {
        guard let index = arguments.firstIndex(of: "--tls-port"), index + 1 < arguments.count else { return nil }
        return Int(arguments[index + 1])
    }

    /// Whether the `rediss://` tests run: `redis-server` and the `openssl` tool are installed (Debian's redis-server
    /// is built with TLS), or Redis or TLS tests are required (CI sets both flags).
    public static var tlsTestsEnabled: Bool {
        isRequired || TestCertificates.isRequired
            || (executablePath != nil && TestCertificates.executable("openssl") != nil)
    }

    /// A server that speaks TLS too, on a free port of its own (``tlsPort``), with the certificate chain and key
    /// given; its plain port stays open for ``command(_:timeout:)``. `caFile` is the CA bundle redis-server checks
    /// client certificates with; with `authClients`, a client without a certificate from it is refused.
    public static func startTLS(
        certificateFile: String,
        privateKeyFile: String,
        caFile: String,
        authClients: Bool = false,
        arguments: [String] = []
    ) throws -> RedisServer {
        guard let tlsPort = freePort() else { throw Failure.noFreePort }
        return try start(
            arguments: [
                "--tls-port", String(tlsPort), "--tls-cert-file", certificateFile, "--tls-key-file", privateKeyFile,
                "--tls-ca-cert-file", caFile, "--tls-auth-clients", authClients ? "yes" : "no",
            ] + arguments
        )
    }

    /// Kills the server with SIGKILL, as a crash would, and reaps it. With `keepingData` it first makes the server
    /// write its dump (`SAVE`, which works with `--save ""`), and leaves its directory for ``restarted(timeout:)``,
    /// which loads it; without, the directory goes, and the restarted server starts empty.
    public func kill(keepingData: Bool) throws {
        if keepingData {
            let reply = try command(["SAVE"])
            guard reply == "+OK" else { throw Failure.commandFailed(command: "SAVE", reply: reply) }
        }
        guard !stopped else { return }
        stopped = true
        process.kill()
        keptData = keepingData
        if !keepingData { try? FileManager.default.removeItem(at: directory) }
    }

    /// Stops the server with SIGSTOP, as a stalled host or a long pause would: connections stay open, commands
    /// written to them wait unread, and nothing is answered until ``thaw()``. ``stop()`` still ends it.
    public func freeze() {
        guard !stopped else { return }
        process.signal(SIGSTOP)
    }

    /// Lets a frozen server run again (SIGCONT): it reads and runs what was written to it meanwhile.
    public func thaw() {
        guard !stopped else { return }
        process.signal(SIGCONT)
    }

    /// A new server on the same port (a client's configured address) and the same extra arguments, after
    /// ``kill(keepingData:)``: in the same directory, loading the dump, when the data was kept.
    /// The new server owns the directory from then on.
    public func restarted(timeout: Duration = .seconds(10)) throws -> RedisServer {
        let server = try RedisServer.start(
            arguments: arguments,
            port: port,
            directory: keptData ? directory : nil,
            timeout: timeout
        )
        keptData = false
        return server
    }

    /// Sends one command on a new connection and returns the reply's first line (`+OK`, `:3`, `-ERR …`, `$-1`),
    /// and for a bulk string its text instead. For inspecting the server from a test, not for large replies.
    public func command(_ arguments: [String], timeout: Duration = .seconds(10)) throws -> String {
        let client = try LoopbackClient(port: port)
        defer { client.close() }
        var request = "*\(arguments.count)\r\n"
        for argument in arguments { request += "$\(argument.utf8.count)\r\n\(argument)\r\n" }
        try client.send(request)
        var reply: [UInt8] = []
        // Bounded: every read waits at most `timeout`, and a reply longer than 1 MiB is cut.
        while reply.count < 1 << 20 {
            let text = String(decoding: reply, as: UTF8.self)
            if let lineEnd = text.range(of: "\r\n") {
                let line = String(text[..<lineEnd.lowerBound])
                guard line.hasPrefix("$"), let length = Int(line.dropFirst()), length >= 0 else { return line }
                let body = text[lineEnd.upperBound...]
                if body.utf8.count >= length + 2 { return String(decoding: body.utf8.prefix(length), as: UTF8.self) }
            }
            let more = try client.readSome(timeout: timeout)
            if more.isEmpty { break }
            reply += more
        }
        throw Failure.commandFailed(command: arguments.first ?? "", reply: String(decoding: reply, as: UTF8.self))
    }

    /// The server's log so far.
    public var logText: String {
        log.withLock { String(decoding: $0.bytes.suffix(4096), as: UTF8.self) }
    }

    // MARK: - Starting

    private static func launch(_ executable: String, port: Int, arguments: [String], directory existing: URL?) throws
        -> RedisServer
    {
        let directory =
            existing
            ?? FileManager.default.temporaryDirectory
            .appendingPathComponent("spout-redis-\(getpid())-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let process = try ChildProcess(
            executable: executable,
            arguments: [
                "--port", String(port), "--bind", "127.0.0.1", "--dir", directory.path, "--save", "",
                "--appendonly", "no", "--daemonize", "no", "--logfile", "", "--loglevel", "notice",
            ] + arguments,
            workingDirectory: directory.path,
            standardOutput: .pipe,
            standardError: .standardOutput
        )

        let server = RedisServer(port: port, directory: directory, process: process)
        let log = server.log
        // Reads the log until the server's end closes the pipe, so the server never blocks on a full pipe.
        let reader = process.standardOutput
        let signal = server.logged
        let thread = Thread {
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = chunk.withUnsafeMutableBytes { Glibc.read(reader, $0.baseAddress, 4096) }
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { break }
                log.withLock { $0.bytes += chunk[0..<count] }
                signal.signal()
            }
            process.closeStandardOutput()
            log.withLock { $0.ended = true }
            signal.signal()
        }
        thread.start()
        return server
    }

    private enum StartOutcome {
        case ready
        case portTaken
        case exited
        case timedOut
    }

    private func waitUntilReady(timeout: Duration) -> StartOutcome {
        let deadline = DispatchTime.now() + .nanoseconds(Int(timeout.components.seconds) * 1_000_000_000)
        while true {
            let (text, ended) = log.withLock { (String(decoding: $0.bytes, as: UTF8.self), $0.ended) }
            if text.contains("Ready to accept connections") { return .ready }
            if text.contains("Address already in use") { return .portTaken }
            if ended { return .exited }
            if logged.wait(timeout: deadline) == .timedOut { return .timedOut }
        }
    }

    /// A loopback port nobody listens on right now: bound to port 0, read back and released.
    public static func freePort() -> Int? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else { return nil }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { return nil }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
