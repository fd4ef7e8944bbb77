import Dispatch
import Foundation
import Glibc
import Reactive
import Synchronization

/// A child process for tests, started with `posix_spawn(2)`: arguments, environment, stdin from `/dev/null` or
/// from given bytes, stdout and stderr to a pipe or to `/dev/null`; a bounded ``wait(timeout:)``, signals, and
/// reading stdout to its end with a deadline.
///
/// It replaces Foundation's `Process`, whose `run()` walks `/proc/self/fd` copying whole `dirent` records and so
/// reads past the end of readdir's buffer: an intermittent SIGSEGV that ends the whole test run.
///
///     let child = try ChildProcess(executable: "/usr/bin/env", arguments: ["python3", "-c", script])
///     let output = try child.readStandardOutput(timeout: .seconds(30))
///     let exit = child.wait(timeout: .seconds(10))
///
/// The child gets stdin, stdout and stderr and no other descriptor of the test process (closed from 3 up in the
/// child). The parent's pipe ends are close-on-exec (and opened close-on-exec, `pipe2`), so no other child started
/// meanwhile holds them and keeps their end-of-file away. Given stdin bytes go through an unlinked temporary file,
/// so a child that writes before it reads cannot deadlock against the test. The child starts with default signal
/// dispositions (SIGPIPE too, which the test process ignores) and no blocked signals.
///
/// **Ownership:** The test owns it; `deinit` closes the pipe ends still open and, if the child was never reaped,
/// kills it with SIGKILL and reaps it (bounded).
///
/// **Thread safety:** Safe from any thread (state guarded by a `Mutex`); one reader per pipe at a time.
public final class ChildProcess: Sendable {
    /// Where a child's stdout or stderr goes.
    public enum Output: Sendable {
        /// Discarded (`/dev/null`).
        case null
        /// A pipe the test reads (``standardOutput``, ``standardError``).
        case pipe
        /// For stderr: the same place as stdout.
        case standardOutput
    }

    /// How the child ended.
    public enum Termination: Equatable, Sendable {
        case exited(Int32)
        case signalled(Int32)

        /// The exit status, or `nil` when a signal ended it.
        public var exitStatus: Int32? {
            if case .exited(let status) = self { return status }
            return nil
        }
    }

    public enum Failure: Error, CustomStringConvertible {
        case spawnFailed(executable: String, errno: Int32)
        case setupFailed(what: String, errno: Int32)
        case timedOut(what: String)

        public var description: String {
            switch self {
            case .spawnFailed(let executable, let errno):
                "posix_spawn of \(executable) failed: \(String(cString: strerror(errno)))"
            case .setupFailed(let what, let errno):
                "\(what) failed: \(String(cString: strerror(errno)))"
            case .timedOut(let what):
                "child process: \(what) timed out"
            }
        }
    }

    private struct State {
        var termination: Termination?
        var standardOutput: Int32
        var standardError: Int32
    }

    /// The child's process id. Valid for signals until ``wait(timeout:)`` or ``hasExited`` has reaped it.
    public let pid: pid_t
    private let state: LockedState<State>

    /// The sanitizer runtimes' settings a child started with an environment of its own still gets.
    static let sanitizerVariables = ["ASAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS"]

    /// Starts `executable` (a path; no `PATH` search) with `arguments` (without argv[0], which is `executable`).
    /// - Parameters:
    ///   - environment: The child's whole environment (plus the sanitizers' `ASAN_OPTIONS`, `LSAN_OPTIONS` and
    ///     `TSAN_OPTIONS` of the test process, unless given); `nil` inherits the test process's.
    ///   - workingDirectory: The child's current directory; `nil` keeps the test process's.
    ///   - input: Bytes the child reads on stdin; `nil` gives it `/dev/null`.
    ///   - newProcessGroup: Puts the child in a process group of its own (see ``signalGroup(_:)``).
    public init(
        executable: String,
        arguments: [String] = [],
        environment: [String: String]? = nil,
        workingDirectory: String? = nil,
        input: [UInt8]? = nil,
        standardOutput: Output = .pipe,
        standardError: Output = .null,
        newProcessGroup: Bool = false
    ) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }

        var inputPath: String?
        defer { if let inputPath { unlink(inputPath) } }
        if let input {
            let path = try Self.temporaryFile(with: input)
            inputPath = path
            posix_spawn_file_actions_addopen(&actions, 0, path, O_RDONLY, 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }

        // The child's pipe ends, closed here once it holds its copies.
        var childEnds: [Int32] = []
        var parentEnds: [Int32] = []
        defer { for fd in childEnds { close(fd) } }
        var outRead: Int32 = -1
        var errRead: Int32 = -1
        do {
            switch standardOutput {
            case .pipe:
                let (read, write) = try Self.makePipe()
                outRead = read
                parentEnds.append(read)
                childEnds.append(write)
                posix_spawn_file_actions_adddup2(&actions, write, 1)
            case .null, .standardOutput:
                posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
            }
            switch standardError {
            case .pipe:
                let (read, write) = try Self.makePipe()
                errRead = read
                parentEnds.append(read)
                childEnds.append(write)
                posix_spawn_file_actions_adddup2(&actions, write, 2)
            case .standardOutput:
                posix_spawn_file_actions_adddup2(&actions, 1, 2)
            case .null:
                posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
            }
        } catch {
            for fd in parentEnds { close(fd) }
            throw error
        }
        if let workingDirectory {
            // glibc 2.29's posix_spawn_file_actions_addchdir_np, which the Glibc overlay does not import.
            typealias AddChdir =
                @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, UnsafePointer<CChar>?) -> Int32
            guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addchdir_np")
            else {
                for fd in parentEnds { close(fd) }
                throw Failure.setupFailed(what: "dlsym(posix_spawn_file_actions_addchdir_np)", errno: ENOSYS)
            }
            _ = unsafeBitCast(symbol, to: AddChdir.self)(&actions, workingDirectory)
        }

        // Last: every descriptor above stderr closed in the child, close-on-exec or not (what Foundation's walk of
        // /proc/self/fd did), so the child holds no socket or pipe of another test. glibc 2.34's
        // posix_spawn_file_actions_addclosefrom_np, which the Glibc overlay does not import.
        typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32
        guard let closeFrom = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np")
        else {
            for fd in parentEnds { close(fd) }
            throw Failure.setupFailed(what: "dlsym(posix_spawn_file_actions_addclosefrom_np)", errno: ENOSYS)
        }
        _ = unsafeBitCast(closeFrom, to: AddCloseFrom.self)(&actions, 3)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGPIPE)
        var mask = sigset_t()
        sigemptyset(&mask)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &mask)
        var flags = POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK
        if newProcessGroup {
            posix_spawnattr_setpgroup(&attributes, 0)
            flags |= POSIX_SPAWN_SETPGROUP
        }
        posix_spawnattr_setflags(&attributes, Int16(flags))

        var argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) }
        argv.append(nil)
        defer { for argument in argv { free(argument) } }
        var child: pid_t = 0
        let status: Int32
        if var environment {
            // A sanitized test run's settings (suppressions, leak exit code) hold for the children it starts too,
            // unless the test sets them itself: a child with none would fail on what the stage has ruled out.
            let inherited = ProcessInfo.processInfo.environment
            for name in Self.sanitizerVariables where environment[name] == nil {
                if let value = inherited[name] { environment[name] = value }
            }
            var envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") }
            envp.append(nil)
            defer { for entry in envp { free(entry) } }
            status = posix_spawn(&child, executable, &actions, &attributes, argv, envp)
        } else {
            status = posix_spawn(&child, executable, &actions, &attributes, argv, environ)
        }
        guard status == 0 else {
            for fd in parentEnds { close(fd) }
            throw Failure.spawnFailed(executable: executable, errno: status)
        }
        pid = child
        state = LockedState(State(termination: nil, standardOutput: outRead, standardError: errRead))
    }

    deinit {
        let (reaped, descriptors) = state.withLock { ($0.termination != nil, [$0.standardOutput, $0.standardError]) }
        for fd in descriptors where fd >= 0 { close(fd) }
        if !reaped {
            Glibc.kill(pid, SIGKILL)
            _ = wait(timeout: .seconds(10))
        }
    }

    // MARK: - Pipes

    /// The read end of the child's stdout pipe, or -1 (not a pipe, or closed).
    public var standardOutput: Int32 { state.withLock { $0.standardOutput } }

    /// The read end of the child's stderr pipe, or -1 (not a pipe, or closed).
    public var standardError: Int32 { state.withLock { $0.standardError } }

    /// Closes the test's end of the stdout pipe (a reader that is done with it). Idempotent.
    public func closeStandardOutput() {
        let fd = state.withLock { state in
            defer { state.standardOutput = -1 }
            return state.standardOutput
        }
        if fd >= 0 { close(fd) }
    }

    /// Reads the child's stdout to its end (the child and everything it started closed it), failing with
    /// ``Failure/timedOut(what:)`` if that takes longer than `timeout` (scaled by ``TestTiming``).
    public func readStandardOutput(timeout: Duration = .seconds(30)) throws -> [UInt8] {
        let fd = standardOutput
        guard fd >= 0 else { return [] }
        let deadline =
            DispatchTime.now().uptimeNanoseconds + UInt64(TestTiming.scaled(timeout).milliseconds) * 1_000_000
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let now = DispatchTime.now().uptimeNanoseconds
            guard now < deadline else { throw Failure.timedOut(what: "reading stdout") }
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, Int32(clamping: (deadline - now) / 1_000_000 + 1))
            if ready < 0 && errno != EINTR { throw Failure.setupFailed(what: "poll", errno: errno) }
            guard ready > 0 else { continue }
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count < 0 { throw Failure.setupFailed(what: "read", errno: errno) }
            if count == 0 { return output }
            output.append(contentsOf: chunk[..<count])
        }
    }

    // MARK: - Exit

    /// How the child ended, if it has (reaping it then); `nil` while it runs.
    public var termination: Termination? {
        reap()
    }

    /// Whether the child has ended (reaping it then).
    public var hasExited: Bool { termination != nil }

    /// Waits until the child ends, up to `timeout` (scaled by ``TestTiming``), polling `waitpid(WNOHANG)`;
    /// `nil` if it still runs then.
    @discardableResult
    public func wait(timeout: Duration = .seconds(10)) -> Termination? {
        let deadline =
            DispatchTime.now().uptimeNanoseconds + UInt64(TestTiming.scaled(timeout).milliseconds) * 1_000_000
        while true {
            if let termination = reap() { return termination }
            guard DispatchTime.now().uptimeNanoseconds < deadline else { return nil }
            var none = pollfd()
            _ = poll(&none, 0, 5)
        }
    }

    /// Sends `signal` to the child, unless it has been reaped (its pid may name another process by then).
    public func signal(_ signal: Int32) {
        state.withLock { state in
            if state.termination == nil { _ = Glibc.kill(pid, signal) }
        }
    }

    /// Sends `signal` to the child's process group (``init(executable:arguments:environment:workingDirectory:input:standardOutput:standardError:newProcessGroup:)``
    /// with `newProcessGroup`), unless the child has been reaped.
    public func signalGroup(_ signal: Int32) {
        state.withLock { state in
            if state.termination == nil { _ = Glibc.kill(-pid, signal) }
        }
    }

    /// SIGKILL, then a bounded wait; the termination, or `nil` if it has not ended in 10 s.
    @discardableResult
    public func kill() -> Termination? {
        signal(SIGKILL)
        return wait(timeout: .seconds(10))
    }

    /// One `waitpid(WNOHANG)`, under the lock so a signal never reaches a reaped pid.
    private func reap() -> Termination? {
        state.withLock { state in
            if let termination = state.termination { return termination }
            var status: Int32 = 0
            var result: pid_t
            repeat {
                result = waitpid(pid, &status, WNOHANG)
            } while result < 0 && errno == EINTR
            guard result == pid else { return nil }
            // WIFEXITED / WEXITSTATUS / WTERMSIG, which the Glibc overlay does not import.
            let termination: Termination =
                status & 0x7f == 0 ? .exited((status >> 8) & 0xff) : .signalled(status & 0x7f)
            state.termination = termination
            return termination
        }
    }

    // MARK: - Set-up

    /// A pipe whose two ends are close-on-exec from the start (`pipe2(O_CLOEXEC)`, looked up at run time: the
    /// Glibc overlay lacks it) and numbered 10 or above, so the child's `dup2` onto 0–2 cannot collide with them.
    private static func makePipe() throws -> (read: Int32, write: Int32) {
        typealias Pipe2 = @convention(c) (UnsafeMutablePointer<Int32>?, Int32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "pipe2") else {
            throw Failure.setupFailed(what: "dlsym(pipe2)", errno: ENOSYS)
        }
        let pipe2 = unsafeBitCast(symbol, to: Pipe2.self)
        var fds: [Int32] = [-1, -1]
        guard pipe2(&fds, O_CLOEXEC) == 0 else { throw Failure.setupFailed(what: "pipe2", errno: errno) }
        let readEnd = fcntl(fds[0], F_DUPFD_CLOEXEC, 10)
        let writeEnd = fcntl(fds[1], F_DUPFD_CLOEXEC, 10)
        let failure = errno
        close(fds[0])
        close(fds[1])
        guard readEnd >= 0, writeEnd >= 0 else {
            if readEnd >= 0 { close(readEnd) }
            if writeEnd >= 0 { close(writeEnd) }
            throw Failure.setupFailed(what: "fcntl(F_DUPFD_CLOEXEC)", errno: failure)
        }
        return (readEnd, writeEnd)
    }

    /// A new temporary file holding `bytes`; the caller unlinks it.
    private static func temporaryFile(with bytes: [UInt8]) throws -> String {
        let path = "\(NSTemporaryDirectory())/spout-child-stdin-\(getpid())-\(UUID().uuidString)"
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Failure.setupFailed(what: "open(\(path))", errno: errno) }
        defer { close(fd) }
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else {
                let failure = errno
                unlink(path)
                throw Failure.setupFailed(what: "write", errno: failure)
            }
            offset += written
        }
        return path
    }
}

extension Duration {
    /// Whole milliseconds, rounded down; 0 for negative durations.
    fileprivate var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return 0 }
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        return overflow ? Int64.max : product.addingReportingOverflow(attoseconds / 1_000_000_000_000_000).partialValue
    }
}
