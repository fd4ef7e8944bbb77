import Dispatch
import Foundation
import Glibc
import TestSupport

/// Debian's `chromium`, headless, driven over its DevTools protocol on a pipe
/// (`--remote-debugging-pipe`: commands in on fd 3, answers and events out on fd 4, each message
/// one JSON object followed by a NUL byte), so no WebSocket client is needed.
///
///     let browser = try HeadlessChromium.launch()
///     defer { browser.terminate() }
///     let page = try browser.openPage(url: "http://127.0.0.1:8081/")
///     let title = try page.evaluate("document.title")
///
/// The browser runs in its own process group, and ``terminate()`` kills that whole group and reaps
/// the browser, so no renderer outlives the test. If the test process dies first, the browser sees
/// its pipe close and exits by itself. Every read from the pipe has a deadline.
///
/// **Ownership:** the test owns it and must call ``terminate()`` (at most once matters; later calls do
/// nothing).
///
/// **Thread safety:** none; used by one test at a time.
final class HeadlessChromium {
    /// Why the browser could not be started or driven.
    enum Failure: Error, CustomStringConvertible {
        case notFound
        case spawnFailed(errno: Int32)
        case pipeClosed(log: String)
        case timedOut(method: String, log: String)
        case protocolError(method: String, message: String)
        case malformedReply(method: String)

        var description: String {
            switch self {
            case .notFound:
                "chromium not found on PATH (install Debian's chromium, or set SPOUT_CHROMIUM)"
            case .spawnFailed(let errno):
                "posix_spawn of chromium failed: \(String(cString: strerror(errno)))"
            case .pipeClosed(let log):
                "the DevTools pipe closed; chromium's output ends with:\n\(log)"
            case .timedOut(let method, let log):
                "no answer to \(method) in time; chromium's output ends with:\n\(log)"
            case .protocolError(let method, let message):
                "\(method) failed: \(message)"
            case .malformedReply(let method):
                "the answer to \(method) is not what the protocol says"
            }
        }
    }

    /// The browser's executable: `SPOUT_CHROMIUM`, else `chromium` on `PATH`.
    static var executablePath: String? {
        let environment = ProcessInfo.processInfo.environment
        if let path = environment["SPOUT_CHROMIUM"], !path.isEmpty {
            return FileManager.default.isExecutableFile(atPath: path) ? path : nil
        }
        let directories = (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        for directory in directories {
            let path = "\(directory)/chromium"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    /// Whether a browser test must run and fail rather than be skipped (CI sets `SPOUT_REQUIRE_BROWSER=1`).
    static var isRequired: Bool {
        let value = ProcessInfo.processInfo.environment["SPOUT_REQUIRE_BROWSER"] ?? ""
        return !value.isEmpty && value != "0"
    }

    /// Whether the browser tests run: when a browser is installed, or when they are required.
    static var testsEnabled: Bool { isRequired || executablePath != nil }

    /// The browser's version as it reports it, e.g. `Chrome/156.0.8078.114`.
    private(set) var product = ""

    private let pid: pid_t
    private let commands: Int32  // Our end of the browser's fd 3.
    private let replies: Int32  // Our end of the browser's fd 4.
    private let profileDirectory: URL
    private var received: [UInt8] = []
    private var nextID = 0
    private var terminated = false

    private init(pid: pid_t, commands: Int32, replies: Int32, profileDirectory: URL) {
        self.pid = pid
        self.commands = commands
        self.replies = replies
        self.profileDirectory = profileDirectory
    }

    deinit {
        terminate()
    }

    /// Starts the browser and waits (up to `timeout`) until it answers on the pipe. `extraArguments` go before the
    /// first page (`--ignore-certificate-errors-spki-list=…` to trust a test CA).
    static func launch(extraArguments: [String] = [], timeout: Duration = .seconds(20)) throws -> HeadlessChromium {
        guard let executable = executablePath else { throw Failure.notFound }
        let profile = FileManager.default.temporaryDirectory
            .appendingPathComponent("spout-chromium-\(getpid())-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: profile, withIntermediateDirectories: true)
        var arguments = [
            executable,
            "--headless",
            // The tests run as root in CI, where Chromium's sandbox refuses to start.
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--disable-sync",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-default-apps",
            "--disable-domain-reliability",
            "--disable-client-side-phishing-detection",
            "--no-pings",
            "--mute-audio",
            // Loopback only: anything else would go to a proxy that is not there, and no name resolves.
            "--proxy-server=127.0.0.1:9",
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
            "--user-data-dir=\(profile.path)",
            "--remote-debugging-pipe",
            "about:blank",
        ]
        arguments.insert(contentsOf: extraArguments, at: arguments.count - 1)
        // A browser that dies must not kill the test with SIGPIPE (HTTPServer ignores it too).
        signal(SIGPIPE, SIG_IGN)
        let (browserIn, commands) = try makePipe()
        let (replies, browserOut) = try makePipe()
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        let logPath = profile.appendingPathComponent("chromium.log").path
        posix_spawn_file_actions_addopen(&actions, 1, logPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // The pipe ends sit at fds >= 10 (see makePipe), so these copies cannot overwrite each other;
        // dup2 onto 3 and 4 also clears close-on-exec there.
        posix_spawn_file_actions_adddup2(&actions, browserIn, 3)
        posix_spawn_file_actions_adddup2(&actions, browserOut, 4)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Its own process group, so terminate() reaches the renderers and helpers too; SIGPIPE back to
        // its default (the test process ignores it) and no blocked signals.
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGPIPE)
        var mask = sigset_t()
        sigemptyset(&mask)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &mask)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(
            &attributes,
            Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK)
        )

        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) }
        argv.append(nil)
        defer { for argument in argv { free(argument) } }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
        // Only the browser holds these now, so its exit shows as the end of the pipe.
        close(browserIn)
        close(browserOut)
        guard status == 0 else {
            close(commands)
            close(replies)
            try? FileManager.default.removeItem(at: profile)
            throw Failure.spawnFailed(errno: status)
        }
        let browser = HeadlessChromium(pid: pid, commands: commands, replies: replies, profileDirectory: profile)
        do {
            let version = try browser.call("Browser.getVersion", timeout: timeout)
            browser.product = version["product"] as? String ?? "unknown"
        } catch {
            browser.terminate()
            throw error
        }
        return browser
    }

    /// Opens a new tab, navigates it to `url` and waits until the page has loaded there.
    func openPage(url: String, timeout: Duration = .seconds(10)) throws -> BrowserPage {
        let target = try call("Target.createTarget", ["url": "about:blank"], timeout: timeout)
        guard let targetID = target["targetId"] as? String else {
            throw Failure.malformedReply(method: "Target.createTarget")
        }
        let attached = try call("Target.attachToTarget", ["targetId": targetID, "flatten": true], timeout: timeout)
        guard let sessionID = attached["sessionId"] as? String else {
            throw Failure.malformedReply(method: "Target.attachToTarget")
        }
        let page = BrowserPage(browser: self, sessionID: sessionID, targetID: targetID)
        let navigation = try call("Page.navigate", ["url": url], session: sessionID, timeout: timeout)
        if let failure = navigation["errorText"] as? String, !failure.isEmpty {
            throw Failure.protocolError(method: "Page.navigate", message: "\(url): \(failure)")
        }
        try page.waitForLoad(of: url, timeout: timeout)
        return page
    }

    /// Sends one command and returns its `result`, reading (and dropping) events until the answer
    /// with the same id arrives or `timeout` passes.
    func call(
        _ method: String,
        _ parameters: [String: Any] = [:],
        session: String? = nil,
        timeout: Duration = .seconds(10)
    ) throws -> [String: Any] {
        nextID += 1
        let id = nextID
        var message: [String: Any] = ["id": id, "method": method, "params": parameters]
        if let session { message["sessionId"] = session }
        var bytes = [UInt8](try JSONSerialization.data(withJSONObject: message))
        bytes.append(0)
        try send(bytes)
        let deadline =
            DispatchTime.now().uptimeNanoseconds + UInt64(TestTiming.scaled(timeout).milliseconds) * 1_000_000
        while true {
            let frame = try nextFrame(method: method, deadline: deadline)
            guard let reply = try? JSONSerialization.jsonObject(with: Data(frame)) as? [String: Any] else {
                throw Failure.malformedReply(method: method)
            }
            guard (reply["id"] as? Int) == id else { continue }  // An event, or a late answer.
            if let error = reply["error"] as? [String: Any] {
                throw Failure.protocolError(method: method, message: "\(error["message"] ?? error)")
            }
            return reply["result"] as? [String: Any] ?? [:]
        }
    }

    /// Kills the browser's process group, reaps the browser and removes its profile. Bounded: SIGKILL
    /// cannot be refused, and the reaping gives up after 10 s.
    func terminate() {
        guard !terminated else { return }
        terminated = true
        close(commands)
        close(replies)
        kill(-pid, SIGKILL)
        let deadline = DispatchTime.now().uptimeNanoseconds + 10_000_000_000
        var status: Int32 = 0
        while waitpid(pid, &status, WNOHANG) == 0 && DispatchTime.now().uptimeNanoseconds < deadline {
            var none = pollfd()
            _ = poll(&none, 0, 5)
        }
        try? FileManager.default.removeItem(at: profileDirectory)
    }

    /// The last lines chromium printed, for failure messages.
    var logTail: String {
        let path = profileDirectory.appendingPathComponent("chromium.log").path
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return "" }
        return text.split(separator: "\n").suffix(15).joined(separator: "\n")
    }

    private func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(commands, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                throw Failure.pipeClosed(log: logTail)
            }
            offset += written
        }
    }

    /// The next NUL-terminated message, without its NUL.
    private func nextFrame(method: String, deadline: UInt64) throws -> [UInt8] {
        while true {
            if let end = received.firstIndex(of: 0) {
                let frame = Array(received[..<end])
                received.removeSubrange(...end)
                return frame
            }
            let now = DispatchTime.now().uptimeNanoseconds
            guard now < deadline else { throw Failure.timedOut(method: method, log: logTail) }
            var descriptor = pollfd(fd: replies, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, Int32(clamping: (deadline - now) / 1_000_000 + 1))
            if ready < 0 && errno != EINTR { throw Failure.pipeClosed(log: logTail) }
            guard ready > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let count = chunk.withUnsafeMutableBytes { read(replies, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw Failure.pipeClosed(log: logTail) }
            received.append(contentsOf: chunk[..<count])
        }
    }

    /// A pipe whose two ends are close-on-exec and numbered 10 or above. (Glibc's overlay lacks `pipe2`;
    /// only these tests spawn processes, so the short window before close-on-exec is set is harmless.)
    private static func makePipe() throws -> (read: Int32, write: Int32) {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw Failure.spawnFailed(errno: errno) }
        let readEnd = fcntl(fds[0], F_DUPFD_CLOEXEC, 10)
        let writeEnd = fcntl(fds[1], F_DUPFD_CLOEXEC, 10)
        close(fds[0])
        close(fds[1])
        guard readEnd >= 0, writeEnd >= 0 else { throw Failure.spawnFailed(errno: errno) }
        return (readEnd, writeEnd)
    }
}

/// One tab of a ``HeadlessChromium``, attached over a flat DevTools session.
///
/// **Ownership:** the test; it is only valid while its browser runs.
///
/// **Thread safety:** none; used by one test at a time.
final class BrowserPage {
    private let browser: HeadlessChromium
    let sessionID: String
    /// The tab's DevTools target, for ``close()``.
    let targetID: String

    init(browser: HeadlessChromium, sessionID: String, targetID: String) {
        self.browser = browser
        self.sessionID = sessionID
        self.targetID = targetID
    }

    /// Sends one DevTools command to this tab (e.g. `Page.captureScreenshot`) and returns its `result`.
    @discardableResult
    func call(
        _ method: String,
        _ parameters: [String: Any] = [:],
        timeout: Duration = .seconds(10)
    ) throws -> [String: Any] {
        try browser.call(method, parameters, session: sessionID, timeout: timeout)
    }

    /// Closes the tab as a user would: its document unloads (`pagehide`), its locks and connections go.
    func close(timeout: Duration = .seconds(10)) throws {
        _ = try browser.call("Target.closeTarget", ["targetId": targetID], timeout: timeout)
    }

    /// Evaluates `expression` in the page, awaiting it if it is a promise, and returns its value as a
    /// string (the script should produce one, e.g. with `JSON.stringify`). A thrown exception or a
    /// rejected promise becomes an error carrying its text.
    @discardableResult
    func evaluate(_ expression: String, timeout: Duration = .seconds(10)) throws -> String {
        let result = try browser.call(
            "Runtime.evaluate",
            ["expression": expression, "awaitPromise": true, "returnByValue": true],
            session: sessionID,
            timeout: timeout
        )
        if let exception = result["exceptionDetails"] as? [String: Any] {
            let thrown = (exception["exception"] as? [String: Any])?["description"] as? String
            throw HeadlessChromium.Failure.protocolError(
                method: "Runtime.evaluate",
                message: thrown ?? "\(exception["text"] ?? "exception")"
            )
        }
        guard let value = result["result"] as? [String: Any] else {
            throw HeadlessChromium.Failure.malformedReply(method: "Runtime.evaluate")
        }
        if let text = value["value"] as? String { return text }
        return "\(value["value"] ?? "undefined")"
    }

    /// JavaScript that declares a recorder's waiters inside the script that installs it: `check()`, to be called on
    /// every change, resolves each waiter whose predicate holds over `arguments` (names the script declares, e.g.
    /// `log, source`) with `snapshot()`, which the script declares too; `until(predicate, milliseconds)` waits for
    /// one, and rejects after `milliseconds` with what the page saw. The script exposes `until` for
    /// ``until(_:_:over:_:)``.
    static func waiters(over arguments: String) -> String {
        """
        const waiters = [];
                const check = () => {
                    for (const waiter of waiters.slice()) {
                        if (!waiter.predicate(\(arguments))) continue;
                        waiters.splice(waiters.indexOf(waiter), 1);
                        clearTimeout(waiter.timer);
                        waiter.resolve(snapshot());
                    }
                };
                const until = (predicate, milliseconds) => new Promise((resolve, reject) => {
                    const waiter = { predicate, resolve };
                    waiter.timer = setTimeout(() => {
                        waiters.splice(waiters.indexOf(waiter), 1);
                        reject(new Error("timed out; the page saw " + snapshot()));
                    }, milliseconds);
                    waiters.push(waiter);
                    check();
                });
        """
    }

    /// Evaluates `script`, which installs a recorder in the page, and throws (as `method`'s error) unless it
    /// answers `expected`.
    func install(_ script: String, answering expected: String, method: String) throws {
        let answer = try evaluate(script)
        guard answer == expected else {
            throw HeadlessChromium.Failure.protocolError(method: method, message: answer)
        }
    }

    /// Waits until `condition` (JavaScript over `arguments`) holds in the recorder at `recorder` (its `until`, from
    /// ``waiters(over:)``), and decodes the snapshot it saw then. The page gives up after 8 s, the pipe read after
    /// 10 s; the page's own wait stretches with the test's (TestTiming: sanitizer builds run slower).
    func until<Snapshot: Decodable>(
        _ what: String,
        _ recorder: String,
        over arguments: String,
        _ condition: String
    ) throws -> Snapshot {
        let pageWait = 8000 * TestTiming.scale
        let text = try evaluate("\(recorder).until((\(arguments)) => \(condition), \(pageWait))", timeout: .seconds(10))
        do {
            return try JSONDecoder().decode(Snapshot.self, from: Data(text.utf8))
        } catch {
            throw HeadlessChromium.Failure.protocolError(method: "waiting for \(what)", message: text)
        }
    }

    /// Waits until the tab shows `url` fully loaded; the first evaluations may still reach the
    /// previous document while the navigation commits.
    fileprivate func waitForLoad(of url: String, timeout: Duration) throws {
        let deadline =
            DispatchTime.now().uptimeNanoseconds + UInt64(TestTiming.scaled(timeout).milliseconds) * 1_000_000
        let script = """
            new Promise((resolve) => {
                if (document.readyState === "complete") resolve(location.href);
                else addEventListener("load", () => resolve(location.href), { once: true });
            })
            """
        var seen = ""
        while DispatchTime.now().uptimeNanoseconds < deadline {
            // A navigation that commits mid-evaluation destroys the context: ask again.
            seen = (try? evaluate(script, timeout: .seconds(5))) ?? seen
            if seen == url { return }
        }
        throw HeadlessChromium.Failure.protocolError(
            method: "Page.navigate",
            message: "\(url) did not load (at \(seen))"
        )
    }
}

extension Duration {
    /// The duration in whole milliseconds, rounded down, clamped at zero.
    fileprivate var milliseconds: Int {
        let (seconds, attoseconds) = components
        return max(0, Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000))
    }
}
