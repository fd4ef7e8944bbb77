import Foundation
import HTTPServer
import Synchronization
import TestSupport
import Testing

@testable import Spout

/// The browser client, `/client/spout.js`, in a real browser: its reading of the wire format, against a
/// scripted server.
///
/// Skipped without `chromium` unless `SPOUT_REQUIRE_BROWSER` is set (see ``EventSourceBrowserTests``).
@Suite(
    .serialized,
    .offPool(limited: false),
    .enabled(if: HeadlessChromium.testsEnabled),
    .timeLimit(.minutes(3 * TestTiming.scale))
)
struct ClientBrowserTests {
    @Test func theClientReadsTheWireFormatAndResumesFromItsCursor() async throws {
        let server = try SpoutTestServer()
        let script = try ScriptedStream(responses: [
            .stream(
                "retry: 100\n\n: a comment\n"
                    + #"id: c1\#nevent: note\#ndata: {"channel":"a","id":"e1","data":{"n":1}}\#n\#n"#
                    // CR LF lines, and data on two lines (joined with a line feed: JSON whitespace).
                    + "id: c2\r\ndata: {\"channel\":\"b\",\"id\":\"e2\",\r\ndata: \"data\":{\"n\":2}}\r\n\r\n"
                    + #"event: reset\#ndata: {"channel":"a","reason":"unknown-id","oldest":null}\#n\#n"#
                    + #"event: gap\#ndata: {"channel":"b","missed":3,"after":"e2"}\#n\#n"#
                    // An event of a channel no tab asked for: not delivered, but the cursor moves past it.
                    + #"id: c3\#nevent: note\#ndata: {"channel":"z","id":"e3","data":{"n":3}}\#n\#n"#
                    + #"event: end\#ndata: {"reason":"shutdown"}\#n\#n"#
            ),
            .stream(#"id: c4\#ndata: {"channel":"a","id":"e4","data":{"n":4}}\#n\#n"#),
            .noContent,
        ])
        defer { script.stop() }
        let browser = try HeadlessChromium.launch()
        defer { browser.terminate() }

        let tab = try ClientTab(browser: browser, url: "http://127.0.0.1:\(server.port)/problems/not-found")
        try tab.subscribe(["a", "b"], options: #"{ baseURL: "http://127.0.0.1:\#(script.port)/", token: "tok" }"#)
        let seen = try tab.until("the 204", "status && status.state === 'closed'")

        #expect(
            seen.log.map(\.summary) == [
                "event a e1 note 1", "event b e2 message 2", "reset a unknown-id", "gap b 3 after e2",
                "event a e4 message 4",
            ]
        )
        let requests = script.requests
        #expect(requests.map(\.path) == ["/subscribe", "/subscribe", "/subscribe"])
        #expect(requests.allSatisfy { $0.values("channel") == ["a", "b"] && $0.values("token") == ["tok"] })
        #expect(requests.map { $0.values("lastEventId") } == [[], ["c3"], ["c4"]], "resumed from the last id read")
        #expect(requests.allSatisfy { $0.accept == "text/event-stream" })
        #expect(requests.allSatisfy { $0.lastEventIDHeader == nil }, "the cursor goes in the query: no preflight")
        #expect(server.isHealthy())
        await server.stop()
    }
}

/// One tab running the client over a DevTools session, recording what its handler is given.
///
/// **Ownership:** the test; valid while its browser runs.
///
/// **Thread safety:** none; used by one test.
final class ClientTab {
    /// What the tab's handler and status callback were given.
    struct Snapshot: Decodable {
        struct Message: Decodable, Equatable {
            struct Payload: Decodable, Equatable {
                let n: Int?
            }
            let kind: String
            let channel: String
            let id: String?
            let event: String?
            let data: Payload?
            let reason: String?
            let missed: Int?
            let after: String?

            /// A line for comparisons: `event a e1 note 1`, `reset a unknown-id`, `gap b 3 after e2`.
            var summary: String {
                switch kind {
                case "event": "event \(channel) \(id ?? "-") \(event ?? "-") \(data?.n.map(String.init) ?? "-")"
                case "reset": "reset \(channel) \(reason ?? "-")"
                case "gap": "gap \(channel) \(missed.map(String.init) ?? "-") after \(after ?? "-")"
                default: "\(kind) \(channel)"
                }
            }
        }
        struct Status: Decodable {
            let state: String
            let connected: Bool
            let leader: Bool
        }
        let log: [Message]
        let status: Status?

        var events: [Message] { log.filter { $0.kind == "event" } }

        func numbers(on channel: String) -> [Int?] {
            events.filter { $0.channel == channel }.map { $0.data?.n }
        }

        func ids(on channel: String) -> [String?] {
            events.filter { $0.channel == channel }.map(\.id)
        }
    }

    let page: BrowserPage

    init(browser: HeadlessChromium, url: String) throws {
        page = try browser.openPage(url: url)
    }

    /// Imports the client from the page's origin and subscribes to `channels` with `options` (JavaScript).
    func subscribe(_ channels: [String], options: String = "{}") throws {
        let list = String(decoding: try JSONSerialization.data(withJSONObject: channels), as: UTF8.self)
        let script = """
            (async () => {
                const spout = await import("/client/spout.js");
                const log = [];
                let status = null;
                const waiters = [];
                const events = (log) => log.filter((m) => m.kind === "event");
                const snapshot = () => JSON.stringify({ log, status });
                const check = () => {
                    for (const waiter of waiters.slice()) {
                        if (!waiter.predicate(log, status, events)) continue;
                        waiters.splice(waiters.indexOf(waiter), 1);
                        clearTimeout(waiter.timer);
                        waiter.resolve(snapshot());
                    }
                };
                const options = Object.assign(\(options), {
                    onStatus(next) { status = next; check(); },
                });
                window.test = {
                    unsubscribe: spout.subscribe(\(list), (message) => { log.push(message); check(); }, options),
                    until(predicate, milliseconds) {
                        return new Promise((resolve, reject) => {
                            const waiter = { predicate, resolve };
                            waiter.timer = setTimeout(() => {
                                waiters.splice(waiters.indexOf(waiter), 1);
                                reject(new Error("timed out; the tab saw " + snapshot()));
                            }, milliseconds);
                            waiters.push(waiter);
                            check();
                        });
                    },
                    snapshot,
                };
                return "subscribed";
            })()
            """
        let answer = try page.evaluate(script)
        guard answer == "subscribed" else {
            throw HeadlessChromium.Failure.protocolError(method: "subscribe", message: answer)
        }
    }

    /// Waits until `condition` (JavaScript over `log`, `status` and `events(log)`) holds, and returns what the tab
    /// saw by then. The tab gives up after 8 s, the pipe read after 10 s (both stretched under sanitizers).
    func until(_ what: String, _ condition: String) throws -> Snapshot {
        let pageWait = 8000 * TestTiming.scale
        let text = try page.evaluate(
            "window.test.until((log, status, events) => \(condition), \(pageWait))",
            timeout: .seconds(10)
        )
        return try decode(text, what)
    }

    /// What the tab saw so far.
    func snapshot() throws -> Snapshot {
        try decode(try page.evaluate("window.test.snapshot()"), "the snapshot")
    }

    @discardableResult
    func evaluate(_ expression: String) throws -> String {
        try page.evaluate(expression)
    }

    func close() throws {
        try page.close()
    }

    private func decode(_ text: String, _ what: String) throws -> Snapshot {
        do {
            return try JSONDecoder().decode(Snapshot.self, from: Data(text.utf8))
        } catch {
            throw HeadlessChromium.Failure.protocolError(method: "waiting for \(what)", message: text)
        }
    }
}

/// A server on a loopback port that answers `GET /subscribe` with scripted responses, one per request in order
/// (then `204`), and keeps each request's path, query and headers.
///
/// **Ownership:** the test owns it and calls ``stop()``.
///
/// **Thread safety:** its handler runs on the server's event loops; the state is behind a mutex.
final class ScriptedStream: Sendable {
    enum Reply: Sendable {
        /// `200 text/event-stream` with this body, then the end of the response.
        case stream(String)
        case noContent
    }

    /// A request as it arrived.
    struct Seen: Sendable {
        let path: String
        let query: [(name: String, value: String)]
        let accept: String?
        let lastEventIDHeader: String?

        func values(_ name: String) -> [String] {
            query.filter { $0.name == name }.map { $0.value.removingPercentEncoding ?? $0.value }
        }
    }

    /// The replies still to give and the requests seen, shared with the server's handler.
    private final class Script: Sendable {
        let state: Mutex<(replies: [Reply], seen: [Seen])>

        init(_ replies: [Reply]) {
            state = Mutex((replies, []))
        }
    }

    private let server: Server
    private let script: Script

    var port: Int { server.port }
    var requests: [Seen] { script.state.withLock { $0.seen } }

    init(responses: [Reply]) throws {
        let script = Script(responses)
        self.script = script
        server = try Server.start(configuration: .init(host: "127.0.0.1", port: 0)) { request, responder in
            let seen = Seen(
                path: request.path,
                query: request.queryItems,
                accept: request.headers["Accept"],
                lastEventIDHeader: request.headers["Last-Event-ID"]
            )
            let reply = script.state.withLock { state -> Reply in
                state.seen.append(seen)
                return state.replies.isEmpty ? .noContent : state.replies.removeFirst()
            }
            // The page is on another origin.
            var headers: Headers = ["Access-Control-Allow-Origin": "*", "Cache-Control": "no-store"]
            switch reply {
            case .stream(let body):
                headers.add(name: "Content-Type", value: "text/event-stream")
                responder.respond(headers: headers, body: body)
            case .noContent:
                responder.respond(status: .noContent, headers: headers)
            }
        }
    }

    func stop() {
        server.shutdown(deadline: .zero)
    }
}
