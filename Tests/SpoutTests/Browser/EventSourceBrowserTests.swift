import Foundation
import HTTPServer
import TestSupport
import Testing

@testable import Spout

/// What a real browser's `EventSource` dispatches from Spout's streams: Debian's `chromium`, headless,
/// on a page served from another origin than the service, so CORS is exercised as users meet it.
///
/// Skipped when no `chromium` is installed (so `swift test` needs only the toolchain), unless
/// `SPOUT_REQUIRE_BROWSER` is set, as CI does: then a browser that cannot start fails the test.
/// Serialized so that at most one browser runs at a time on the shared cores. The time limit, three minutes per
/// test (it counts the wait for an `offPool` slot), stretches with the other waits under sanitizers (`TestTiming`).
@Suite(
    .serialized,
    .offPool(limited: false),
    .enabled(if: HeadlessChromium.testsEnabled),
    .timeLimit(.minutes(3 * TestTiming.scale))
)
struct EventSourceBrowserTests {
    static let fibonacci = ["0", "1", "1", "2", "3", "5", "8", "13", "21", "34"]

    @Test func eventSourceGetsEveryValueWithItsIDThenTheEndEvent() async throws {
        let server = try SpoutTestServer()
        let harness = try BrowserHarness()
        defer { harness.close() }

        try harness.watch("http://127.0.0.1:\(server.port)/sequences/fibonacci?count=10", closeOnEnd: true)
        let seen = try harness.until("the end event", "log.ends.length >= 1")

        #expect(seen.messages.map(\.data) == Self.fibonacci)
        #expect(seen.messages.map(\.id) == (0..<10).map(String.init))
        #expect(Set(seen.messages.map(\.origin)) == ["http://127.0.0.1:\(server.port)"])
        #expect(seen.ends.map(\.data) == [#"{"reason":"completed"}"#])
        #expect(seen.ends.map(\.id) == ["9"])
        #expect(seen.opens.count == 1)
        #expect(seen.errors.isEmpty)
        #expect(seen.readyState == 2)

        #expect(eventually { server.requests(to: "/sequences/fibonacci").count == 1 })
        let entry = try #require(server.requests(to: "/sequences/fibonacci").first)
        #expect(entry.status == 200 && entry.events == 10 && entry.end == "completed")
        #expect(server.isHealthy())
        await server.stop()
    }

    @Test func eventSourceReconnectsAfterADropWithLastEventIDAndMissesNothing() async throws {
        let server = try SpoutTestServer { $0.sse.retryMilliseconds = 100 }
        let relay = try CuttableRelay(targetPort: server.port)
        defer { relay.stop() }
        let harness = try BrowserHarness()
        defer { harness.close() }

        try harness.watch("http://127.0.0.1:\(relay.port)/sequences/naturals?interval=20", closeOnEnd: false)
        _ = try harness.until("five values", "log.messages.length >= 5")
        relay.cutAll()
        // Five more values after the reconnect, counted from the last one seen before the drop.
        let seen = try harness.until(
            "the reconnect and five more values",
            "log.errors.length >= 1 && log.opens.length >= 2 && log.messages.length >= Number(log.errors[0].lastId) + 6"
        )
        try harness.closeSource()

        let ids = seen.messages.map(\.id)
        #expect(ids == (0..<ids.count).map(String.init), "no gap and no repeat across the reconnect")
        #expect(seen.messages.map(\.data) == ids, "naturals: each value is its index")
        #expect(seen.errors.map(\.readyState) == [0], "the drop makes it reconnect (CONNECTING), not give up")
        #expect(seen.opens.count == 2)
        let lastBeforeDrop = try #require(seen.errors.first?.lastId)
        let resumedAt = try #require(Int(lastBeforeDrop)) + 1
        #expect(resumedAt >= 5 && ids.count >= resumedAt + 5, "values on both sides of the drop")

        let heads = relay.requestHeads
        #expect(heads.count == 2)
        #expect(heads.first.map { header("Last-Event-ID", in: $0) == nil } == true)
        #expect(heads.last.map { header("Last-Event-ID", in: $0) } == lastBeforeDrop)
        #expect(heads.allSatisfy { header("Origin", in: $0) == harness.origin }, "a cross-origin request")
        #expect(heads.allSatisfy { header("Accept", in: $0) == "text/event-stream" })

        // The `retry: 100` the stream began with sets the reconnection delay (Chromium's own is 3 s).
        // Only the upper bound is checked: the page's timestamps are taken when the events are
        // dispatched, which a loaded machine delays, while the browser's reconnect timer is already
        // running; a lower bound measured that way fails under load without telling anything.
        let delay = try #require(seen.opens.last) - (try #require(seen.errors.first?.at))
        #expect(delay < 2_500, "reconnected \(delay) ms after the drop")

        #expect(eventually { server.requests(to: "/sequences/naturals").count == 2 })
        #expect(server.requests(to: "/sequences/naturals").map(\.end) == ["client_gone", "client_gone"])
        #expect(server.isHealthy())
        await server.stop()
    }

    @Test func resumingPastTheEndIs204AndTheBrowserStopsReconnecting() async throws {
        let server = try SpoutTestServer { $0.sse.retryMilliseconds = 100 }
        let harness = try BrowserHarness()
        defer { harness.close() }

        // The page does not close on `end`: the browser reconnects with Last-Event-ID 9 and gets 204.
        try harness.watch("http://127.0.0.1:\(server.port)/sequences/fibonacci?count=10", closeOnEnd: false)
        let seen = try harness.until("the source to close", "source.readyState === 2")

        #expect(seen.messages.map(\.data) == Self.fibonacci)
        #expect(seen.messages.map(\.id) == (0..<10).map(String.init))
        #expect(seen.ends.map(\.data) == [#"{"reason":"completed"}"#])
        #expect(seen.opens.count == 1)
        #expect(seen.errors.map(\.readyState) == [0, 2], "one reconnect (CONNECTING), then CLOSED")
        let delay = (try #require(seen.errors.last?.at)) - (try #require(seen.errors.first?.at))
        #expect(
            delay < 2_500,
            "the reconnect came \(delay) ms after the end, with retry: 100 (upper bound only, as above)"
        )

        #expect(eventually { server.requests(to: "/sequences/fibonacci").count == 2 })
        #expect(server.requests(to: "/sequences/fibonacci").map(\.status) == [200, 204])
        // CLOSED is final: no request follows within ten reconnection delays.
        #expect(!eventually(timeout: .seconds(1)) { server.requests(to: "/sequences/fibonacci").count > 2 })
        #expect(server.isHealthy())
        await server.stop()
    }

    @Test func afterAShutdownEndEventTheBrowserResumesOnTheNextServer() async throws {
        // A finite stream (300 values, one per 20 ms), so that the second server ends it itself and every
        // count below is exact: nothing is still in flight when the page and the servers are compared.
        let count = 300
        let first = try SpoutTestServer { $0.sse.retryMilliseconds = 300 }
        let harness = try BrowserHarness()
        defer { harness.close() }

        let path = "/sequences/naturals?interval=20&count=\(count)"
        try harness.watch("http://127.0.0.1:\(first.port)\(path)", closeOnEnd: false)
        _ = try harness.until("five values", "log.messages.length >= 5")
        // A rolling restart: the first server drains (its streams get `end` with reason shutdown) and a
        // second one takes its port. If the browser comes back before the second one listens, it is
        // refused and tries again after another `retry`.
        await first.stop()
        let second = try SpoutTestServer {
            $0.port = first.port
            $0.sse.retryMilliseconds = 300
        }
        // The second server finishes the stream; the page (not closing on `end`) reconnects once more,
        // past the end, gets 204 and stops for good.
        let seen = try harness.until("the stream to finish and the source to close", "source.readyState === 2")

        #expect(first.requests(to: "/sequences/naturals").map(\.end) == ["shutdown"], "stopped mid-stream")
        #expect(seen.ends.map(\.data) == [#"{"reason":"shutdown"}"#, #"{"reason":"completed"}"#])
        let ids = seen.messages.map(\.id)
        #expect(ids == (0..<count).map(String.init), "every value once, no gap and no repeat across the restart")
        #expect(seen.messages.map(\.data) == ids)
        #expect(seen.opens.count == 2)
        #expect(seen.errors.last?.readyState == 2, "CLOSED after the 204")
        #expect(
            seen.errors.count >= 3 && seen.errors.dropLast().allSatisfy { $0.readyState == 0 },
            "reconnecting until then"
        )

        #expect(eventually { second.requests(to: "/sequences/naturals").count == 2 })
        let served = second.requests(to: "/sequences/naturals")
        #expect(served.map(\.status) == [200, 204])
        let endID = try #require(seen.ends.first.flatMap { Int($0.id) })
        #expect(served.first?.end == "completed")
        #expect(served.first?.events == count - endID - 1, "the second server sent exactly the rest")
        #expect(second.isHealthy())
        await second.stop()
    }

    @Test func anOriginOutsideTheAllowListGetsNoEvents() async throws {
        let server = try SpoutTestServer { $0.cors.allowedOrigins = ["http://allowed.example"] }
        let harness = try BrowserHarness()
        defer { harness.close() }

        try harness.watch("http://127.0.0.1:\(server.port)/sequences/fibonacci?count=10", closeOnEnd: true)
        let seen = try harness.until("the source to fail", "source.readyState === 2")

        #expect(seen.messages.isEmpty)
        #expect(seen.ends.isEmpty)
        #expect(seen.opens.isEmpty)
        #expect(seen.errors.map(\.readyState) == [2], "a CORS failure fails the connection for good")
        // The request did reach Spout; the browser withheld the answer from the page.
        #expect(eventually { server.requests(to: "/sequences/fibonacci").count == 1 })
        #expect(server.isHealthy())
        await server.stop()
    }
}

/// A browser tab on a page of its own origin (a second server on another port), watching one
/// `EventSource` through a small script that records what it dispatches.
///
/// **Ownership:** the test owns it and calls ``close()``, which kills the browser.
///
/// **Thread safety:** none; used by one test.
final class BrowserHarness {
    /// What the page's `EventSource` dispatched, as the watching script records it.
    struct Seen: Decodable {
        struct Message: Decodable {
            let id: String
            let data: String
            let origin: String
        }
        struct End: Decodable {
            let id: String
            let data: String
        }
        struct ErrorEvent: Decodable {
            /// `readyState` when `error` fired: 0 reconnecting, 2 closed for good.
            let readyState: Int
            /// When it fired, in page milliseconds.
            let at: Double
            /// The id of the last message before it.
            let lastId: String?
        }
        let messages: [Message]
        let ends: [End]
        let errors: [ErrorEvent]
        /// When each `open` fired, in page milliseconds.
        let opens: [Double]
        let readyState: Int
    }

    let pageServer: Server
    let browser: HeadlessChromium
    let page: BrowserPage
    /// The page's origin, e.g. `http://127.0.0.1:41234`.
    let origin: String

    /// - Parameter browserArguments: More command-line arguments for the browser.
    init(browserArguments: [String] = []) throws {
        pageServer = try Server.start(configuration: .init(host: "127.0.0.1", port: 0)) { _, responder in
            responder.respond(
                headers: ["Content-Type": "text/html; charset=utf-8"],
                body: "<!doctype html><title>Spout browser test</title>\n"
            )
        }
        origin = "http://127.0.0.1:\(pageServer.port)"
        do {
            browser = try HeadlessChromium.launch(extraArguments: browserArguments)
        } catch {
            pageServer.shutdown(deadline: .zero)
            throw error
        }
        do {
            page = try browser.openPage(url: "\(origin)/")
        } catch {
            browser.terminate()
            pageServer.shutdown(deadline: .zero)
            throw error
        }
    }

    /// Opens `new EventSource(url)` in the page and starts recording; with `closeOnEnd` the page
    /// closes the source on the `end` event, as the README's example does; with `withCredentials` the
    /// source sends cookies cross-origin (`{withCredentials: true}`).
    func watch(_ url: String, closeOnEnd: Bool, withCredentials: Bool = false) throws {
        let script = """
            (() => {
                const log = { messages: [], ends: [], errors: [], opens: [] };
                const source = new EventSource(\(Self.literal(url)), { withCredentials: \(withCredentials) });
                const snapshot = () => JSON.stringify({ ...log, readyState: source.readyState });
                \(BrowserPage.waiters(over: "log, source"))
                source.onopen = () => { log.opens.push(performance.now()); check(); };
                source.onmessage = (event) => {
                    log.messages.push({ id: event.lastEventId, data: event.data, origin: event.origin });
                    check();
                };
                source.addEventListener("end", (event) => {
                    log.ends.push({ id: event.lastEventId, data: event.data });
                    if (\(closeOnEnd)) source.close();
                    check();
                });
                source.onerror = () => {
                    const last = log.messages[log.messages.length - 1];
                    log.errors.push({
                        readyState: source.readyState, at: performance.now(), lastId: last ? last.id : null,
                    });
                    check();
                };
                window.spout = {
                    until,
                    close() { source.close(); return snapshot(); },
                };
                return "watching";
            })()
            """
        try page.install(script, answering: "watching", method: "Runtime.evaluate")
    }

    /// Waits until `condition` (JavaScript over `log` and `source`) holds after some dispatch, and
    /// returns what the page saw by then. The page gives up after 8 s, the pipe read after 10 s.
    func until(_ what: String, _ condition: String) throws -> Seen {
        try page.until(what, "window.spout", over: "log, source", condition)
    }

    /// Closes the page's `EventSource` and returns what the page saw in all: nothing is dispatched
    /// after the close.
    @discardableResult
    func closeSource() throws -> Seen {
        let text = try page.evaluate("window.spout.close()")
        do {
            return try JSONDecoder().decode(Seen.self, from: Data(text.utf8))
        } catch {
            throw HeadlessChromium.Failure.protocolError(method: "closing the source", message: text)
        }
    }

    /// Kills the browser and stops the page's server.
    func close() {
        browser.terminate()
        pageServer.shutdown(deadline: .zero)
    }

    /// `text` as a JavaScript string literal.
    private static func literal(_ text: String) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: [text])) ?? Data("[\"\"]".utf8)
        return String(decoding: data.dropFirst().dropLast(), as: UTF8.self)
    }
}

/// The value of header `name` in a request head (case-insensitive, first occurrence).
private func header(_ name: String, in head: String) -> String? {
    for line in head.split(separator: "\r\n").dropFirst() {
        guard let colon = line.firstIndex(of: ":") else { continue }
        if line[..<colon].lowercased() == name.lowercased() {
            return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
    }
    return nil
}

/// One line of the service's request log.
struct LoggedRequest {
    let path: String
    let status: Int
    let events: Int?
    let end: String?
}

extension SpoutTestServer {
    /// The logged requests to `path`, in the order they were logged.
    func requests(to path: String) -> [LoggedRequest] {
        log.lines.compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                object["path"] as? String == path, let status = object["status"] as? Int
            else { return nil }
            let events = object["events"] as? Int
            return LoggedRequest(path: path, status: status, events: events, end: object["end"] as? String)
        }
    }
}
