import Dispatch
import Foundation
import Glibc
import TestSupport
import Testing

/// The real `spout` binary under a tiny open-file limit (`ulimit -n 64` in the shell that starts it): clients
/// beyond what the descriptors allow get `503` with `Retry-After`, never a silent connection, and the service
/// answers again once they leave. A child process, because `setrlimit` would change the limit of every test
/// running in this process.
@Suite(.offPool) struct OpenFileLimitProcessTests {
    @Test func spoutUnderALowOpenFileLimitAnswers503AndRecovers() throws {
        let child = try SpoutProcess(openFileLimit: 64)
        defer { child.kill() }
        let clamp = try #require(child.clampLine, "no clamp logged; stdout: \(child.outputLines)")
        #expect(
            clamp.contains(
                #""message":"maxConnections 20000 clamped to 32 (open-file limit 64, 32 descriptors reserved, 4 more connections for probes)""#
            )
        )

        // Every client asks for /health and keeps its connection: the first 32 are served and stay open, the
        // next 4 are served on the probe reserve (/health is a probe; those close after the answer, and hold
        // their slot until the client closes), every later one is told to retry.
        var clients: [LoopbackClient] = []
        var statuses: [Int] = []
        for _ in 0..<40 {
            let client = try LoopbackClient(port: child.port)
            try client.sendGet("/health")
            let response = try client.readResponse()
            statuses.append(response.status)
            if response.status == 503 {
                #expect(response.header("retry-after") == "1")
                #expect(response.text == "too many connections\n")
            }
            clients.append(client)
        }
        #expect(
            statuses == Array(repeating: 200, count: 36) + Array(repeating: 503, count: 4),
            "fds: \(child.openDescriptors())"
        )

        clients.removeAll()
        #expect(child.eventuallyHealthy())
    }

    @Test func spoutOutOfDescriptorsAnswers503FromItsSpareAndRecovers() throws {
        let child = try SpoutProcess(openFileLimit: 64)
        defer { child.kill() }
        #expect(child.eventuallyHealthy())
        // Lower the running process's limit to one slot above the descriptors it holds (numbered 0 up: the child
        // inherits none of the test's): one client is served there, and the next socket that needs a new slot
        // makes accept fail with EMFILE, whatever maxConnections allows. (Foundation's Process leaked a test
        // descriptor into the child, whose gap in the numbering gave the same one free slot at `held`.)
        let held = child.openDescriptors().count
        try child.setOpenFileLimit(held + 1)
        var clients: [LoopbackClient] = []
        var rejected: LoopbackClient.Response?
        for _ in 0..<20 where rejected == nil {
            let client = try LoopbackClient(port: child.port)
            try client.sendGet("/health")
            let response = try client.readResponse()
            if response.status == 503 {
                rejected = response
            } else {
                #expect(response.status == 200)
            }
            clients.append(client)
        }
        let response = try #require(rejected, "no 503 with the limit at \(held); fds: \(child.openDescriptors())")
        #expect(response.text == "out of file descriptors\n")
        #expect(response.header("retry-after") == "1")
        #expect(response.header("connection")?.lowercased() == "close")

        // Under the same low limit: once the clients leave, their slots serve new ones.
        clients.removeAll()
        #expect(child.eventuallyHealthy())
    }
}

/// `spout --port 0` started through `/bin/sh` with `ulimit -n`, its port read from its `listening` JSON log line.
private final class SpoutProcess {
    let process: ChildProcess
    let port: Int
    /// The JSON lines the child wrote on stdout until it logged `listening`.
    private(set) var outputLines: [String] = []

    /// The clamp line logged at start, if any.
    var clampLine: String? { outputLines.first { $0.contains(#""event":"connection_limit_clamped""#) } }

    init(openFileLimit: Int) throws {
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent("spout")
        guard FileManager.default.isExecutableFile(atPath: executable.path) else {
            throw SpoutProcessError.missing("no spout binary at \(executable.path); build it with `swift build`")
        }
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("SPOUT_") }
        environment["SPOUT_MAX_CONNECTIONS"] = "20000"
        // Only the start-up lines are read: request lines would fill the pipe once the test stops reading it.
        environment["SPOUT_LOG_REQUESTS"] = "false"
        process = try ChildProcess(
            executable: "/bin/sh",
            arguments: [
                "-c", "ulimit -n \(openFileLimit) && exec \"$0\" \"$@\"", executable.path,
                "--host", "127.0.0.1", "--port", "0", "--event-loops", "2",
            ],
            environment: environment,
            standardOutput: .pipe,
            standardError: .null
        )
        let reader = process.standardOutput
        var found: Int?
        var pending: [UInt8] = []
        let deadline = DispatchTime.now().uptimeNanoseconds + 30_000_000_000
        while found == nil {
            let now = DispatchTime.now().uptimeNanoseconds
            guard now < deadline else { break }
            var descriptor = pollfd(fd: reader, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, Int32((deadline - now) / 1_000_000 + 1)) > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = read(reader, &chunk, chunk.count)
            guard count > 0 else { break }
            pending += chunk[0..<count]
            while let newline = pending.firstIndex(of: 0x0A) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeFirst(newline + 1)
                outputLines.append(line)
                if line.contains(#""event":"listening""#), let range = line.range(of: #""port":"#) {
                    found = Int(line[range.upperBound...].prefix { $0.isNumber })
                }
            }
        }
        guard let found else {
            process.signal(SIGTERM)
            throw SpoutProcessError.noPort(outputLines)
        }
        port = found
    }

    /// The child's open descriptors and what they point at.
    func openDescriptors() -> [String] {
        let directory = "/proc/\(process.pid)/fd"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.map { name in
            "\(name)→\((try? FileManager.default.destinationOfSymbolicLink(atPath: "\(directory)/\(name)")) ?? "?")"
        }
    }

    /// Sets the child's soft and hard `RLIMIT_NOFILE` (`prlimit(2)`).
    func setOpenFileLimit(_ limit: Int) throws {
        typealias PRLimit =
            @convention(c) (pid_t, Int32, UnsafePointer<rlimit>?, UnsafeMutablePointer<rlimit>?) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "prlimit") else {
            throw SpoutProcessError.missing("libc lacks prlimit")
        }
        let prlimit = unsafeBitCast(symbol, to: PRLimit.self)
        var value = rlimit(rlim_cur: rlim_t(limit), rlim_max: rlim_t(limit))
        guard prlimit(process.pid, Int32(RLIMIT_NOFILE.rawValue), &value, nil) == 0 else {
            throw SpoutProcessError.missing("prlimit failed: errno \(errno)")
        }
    }

    /// Whether `GET /health` answers 200 on a new connection, retrying (bounded) while the server counts the
    /// closes of the connections that just left.
    func eventuallyHealthy() -> Bool {
        for _ in 0..<200 {
            guard let client = try? LoopbackClient(port: port) else { continue }
            guard (try? client.sendGet("/health")) != nil else { continue }
            if (try? client.readResponse())?.status == 200 { return true }
        }
        return false
    }

    func kill() {
        #expect(process.kill() != nil, "spout did not exit")
    }
}

private enum SpoutProcessError: Error, CustomStringConvertible {
    case missing(String)
    case noPort([String])

    var description: String {
        switch self {
        case .missing(let why): why
        case .noPort(let lines): "spout printed no port: \(lines)"
        }
    }
}
