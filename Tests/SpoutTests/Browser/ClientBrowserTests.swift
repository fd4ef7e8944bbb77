import Foundation
import HTTPServer
import Synchronization
import TestSupport
import Testing

@testable import Spout

/// The browser client, `/client/spout.js`, in a real browser: several tabs of one origin share one
/// connection, each gets the events it asked for, and the tab that holds the connection can die without
/// an event being lost; and the client's reading of the wire format, against a scripted server.
///
/// Skipped without `chromium` unless `SPOUT_REQUIRE_BROWSER` is set (see ``EventSourceBrowserTests``).
@Suite(
    .serialized,
    .offPool(limited: false),
    .enabled(if: HeadlessChromium.testsEnabled),
    .timeLimit(.minutes(3 * TestTiming.scale))
)
struct ClientBrowserTests {
    @Test func tabsShareOneConnectionAndALeaderThatDiesLosesNothing() async throws {
        let server = try SpoutTestServer()
        let publisher = try ChannelHTTP(port: server.port)
        let browser = try HeadlessChromium.launch()
        defer { browser.terminate() }
        // A page of Spout's origin without scripts of its own: the tabs run only the client.
        let page = "http://127.0.0.1:\(server.port)/problems/not-found"

        let first = try ClientTab(browser: browser, url: page)
        try first.subscribe(["a", "b"])
        _ = try first.until("the first tab to lead", "status && status.leader && status.connected")
        let second = try ClientTab(browser: browser, url: page)
        try second.subscribe(["b", "news.*"])
        let third = try ClientTab(browser: browser, url: page)
        try third.subscribe(["c"])
        for tab in [second, third] {
            _ = try tab.until("a follower to see the connection", "status && !status.leader && status.connected")
        }
        // One connection, for the union of the three tabs' channels.
        #expect(eventually { server.subscribers(["a", "b", "c"]) == [1, 1, 1] && server.activeStreams == 1 })

        var ids: [String: [String]] = [:]
        for (channel, numbers) in [
            ("a", [1, 2, 3]), ("b", [1, 2, 3]), ("news.x", [1, 2]), ("c", [1, 2]), ("d", [9]),
        ] {
            ids[channel, default: []] += try publisher.publishIDs(channel, channelBody(numbers))
        }
        let firstSeen = try first.until("a and b", "events(log).length >= 6")
        let secondSeen = try second.until("b and news.x", "events(log).length >= 5")
        let thirdSeen = try third.until("c", "events(log).length >= 2")
        #expect(firstSeen.numbers(on: "a") == [1, 2, 3] && firstSeen.numbers(on: "b") == [1, 2, 3])
        #expect(firstSeen.events.count == 6, "nothing of the channels it did not ask for")
        #expect(firstSeen.ids(on: "a") == ids["a"] && firstSeen.ids(on: "b") == ids["b"])
        #expect(secondSeen.numbers(on: "b") == [1, 2, 3] && secondSeen.numbers(on: "news.x") == [1, 2])
        #expect(secondSeen.events.count == 5)
        #expect(thirdSeen.numbers(on: "c") == [1, 2] && thirdSeen.events.count == 2)

        // The leader dies as a crashed tab would: from now on it hands nothing to the others (and cannot say
        // goodbye), though its connection still reads what is published.
        try first.evaluate("BroadcastChannel.prototype.postMessage = function () {}; 'cut'")
        for (channel, numbers) in [("a", [4]), ("b", [4]), ("news.x", [3]), ("c", [3])] {
            ids[channel, default: []] += try publisher.publishIDs(channel, channelBody(numbers))
        }
        _ = try first.until("the leader to read b 4", "events(log).some((m) => m.channel === 'b' && m.data.n === 4)")
        #expect(try second.snapshot().numbers(on: "b") == [1, 2, 3], "the followers have not been handed b 4")
        try first.close()

        // A follower takes over from the last cursor it was handed: what the dead leader read and kept comes again.
        let secondAfter = try second.until("b 4 and news.x 3", "events(log).length >= 7")
        let thirdAfter = try third.until("c 3", "events(log).length >= 3")
        #expect(eventually { server.subscribers(["a", "b", "c"]) == [0, 1, 1] && server.activeStreams == 1 })
        #expect(try [second, third].filter { try $0.snapshot().status?.leader == true }.count == 1)
        for (channel, numbers) in [("b", [5]), ("c", [4])] {
            ids[channel, default: []] += try publisher.publishIDs(channel, channelBody(numbers))
        }
        let secondLast = try second.until("b 5", "events(log).length >= 8")
        let thirdLast = try third.until("c 4", "events(log).length >= 4")
        _ = (secondAfter, thirdAfter)
        #expect(secondLast.numbers(on: "b") == [1, 2, 3, 4, 5], "every event once, across the hand-over")
        #expect(secondLast.numbers(on: "news.x") == [1, 2, 3])
        #expect(secondLast.ids(on: "b") == ids["b"])
        #expect(thirdLast.numbers(on: "c") == [1, 2, 3, 4])
        #expect(thirdLast.ids(on: "c") == ids["c"])
        #expect(server.isHealthy())
        await server.stop()
    }

    /// A tab joining with a new channel makes the leader reconnect for the union. The new connection's request is
    /// held back in the page while an event is published, which the old connection, reading on until the new one
    /// is open, delivers: before any event (no cursor to resume from) only it can; after one (`withCursor`) the
    /// new connection replays it from the cursor too, and the tab is given it once.
    @Test(arguments: [false, true])
    func aChangeOfChannelsMissesNothingWhileTheNewConnectionOpens(withCursor: Bool) async throws {
        let server = try SpoutTestServer()
        let publisher = try ChannelHTTP(port: server.port)
        let browser = try HeadlessChromium.launch()
        defer { browser.terminate() }
        let page = "http://127.0.0.1:\(server.port)/problems/not-found"

        let first = try ClientTab(browser: browser, url: page)
        // The leader's next /subscribe waits for window.release().
        try first.evaluate(
            """
            const realFetch = window.fetch;
            window.calls = 0;
            window.held = new Promise((resolve) => { window.release = resolve; });
            window.fetch = (...args) => (++window.calls === 2 ? window.held.then(() => realFetch(...args)) : realFetch(...args));
            'patched'
            """
        )
        try first.subscribe(["a"])
        _ = try first.until("the first tab to lead", "status && status.leader && status.connected")
        #expect(eventually { server.subscribers(["a"]) == [1] })
        var ids: [String] = []
        if withCursor {
            ids += try publisher.publishIDs("a", channelBody([0]))
            _ = try first.until("a 0", "events(log).length >= 1")
        }
        let second = try ClientTab(browser: browser, url: page)
        try second.subscribe(["b"])
        // The leader asks for the union: that request is held.
        let held = try first.evaluate(
            """
            new Promise((resolve) => {
                const poll = () => (window.calls >= 2 ? resolve(String(window.calls)) : setTimeout(poll, 10));
                poll();
            })
            """
        )
        #expect(held == "2")
        ids += try publisher.publishIDs("a", channelBody([1]))
        _ = try first.until("a 1 on the old connection", "events(log).some((m) => m.data.n === 1)")
        try first.evaluate("window.release(); 'released'")
        #expect(eventually { server.subscribers(["a", "b"]) == [1, 1] && server.activeStreams == 1 })
        ids += try publisher.publishIDs("a", channelBody([2]))
        _ = try publisher.publishIDs("b", channelBody([1]))
        let seen = try first.until("a 2", "events(log).some((m) => m.data.n === 2)")
        let secondSeen = try second.until("b 1", "events(log).length >= 1")
        #expect(
            seen.numbers(on: "a") == (withCursor ? [0, 1, 2] : [1, 2]),
            "a 1 once, though both connections carry it"
        )
        #expect(seen.ids(on: "a") == ids)
        #expect(secondSeen.numbers(on: "b") == [1] && secondSeen.events.count == 1)
        #expect(server.isHealthy())
        await server.stop()
    }

    /// docs/CLIENT.md: where Web Locks or `BroadcastChannel` are missing, or with `shared: false`, each tab has a
    /// connection of its own. Two tabs, on `a` and on `a`,`b`: two streams on the server, each tab gets exactly its
    /// channels' events, once; closing one tab ends its connection only, and the other goes on.
    @Test(arguments: ["no Web Locks", "no BroadcastChannel", "shared: false"])
    func withoutSharingEachTabHasAConnectionOfItsOwn(fallback: String) async throws {
        let server = try SpoutTestServer()
        let publisher = try ChannelHTTP(port: server.port)
        let browser = try HeadlessChromium.launch()
        defer { browser.terminate() }
        let page = "http://127.0.0.1:\(server.port)/problems/not-found"
        let (patch, options) =
            switch fallback {
            case "no Web Locks":
                ("Object.defineProperty(Navigator.prototype, 'locks', { get: () => undefined }); 'patched'", "{}")
            case "no BroadcastChannel": ("delete window.BroadcastChannel; 'patched'", "{}")
            default: ("'unpatched'", "{ shared: false }")
            }

        var tabs: [ClientTab] = []
        for channels in [["a"], ["a", "b"]] {
            let tab = try ClientTab(browser: browser, url: page)
            try tab.evaluate(patch)
            try tab.subscribe(channels, options: options)
            _ = try tab.until("its own connection", "status && status.leader && status.connected")
            tabs.append(tab)
        }
        #expect(eventually { server.subscribers(["a", "b"]) == [2, 1] && server.activeStreams == 2 })

        var ids: [String: [String]] = [:]
        for (channel, numbers) in [("a", [1, 2, 3]), ("b", [1]), ("c", [9])] {
            ids[channel, default: []] += try publisher.publishIDs(channel, channelBody(numbers))
        }
        let firstSeen = try tabs[0].until("a", "events(log).length >= 3")
        let secondSeen = try tabs[1].until("a and b", "events(log).length >= 4")
        #expect(firstSeen.numbers(on: "a") == [1, 2, 3] && firstSeen.events.count == 3)
        #expect(firstSeen.ids(on: "a") == ids["a"])
        #expect(secondSeen.numbers(on: "a") == [1, 2, 3] && secondSeen.numbers(on: "b") == [1])
        #expect(secondSeen.events.count == 4)

        try tabs[0].close()
        #expect(eventually { server.subscribers(["a", "b"]) == [1, 1] && server.activeStreams == 1 })
        ids["a", default: []] += try publisher.publishIDs("a", channelBody([4]))
        let secondLast = try tabs[1].until("a 4", "events(log).length >= 5")
        #expect(secondLast.numbers(on: "a") == [1, 2, 3, 4], "every event once")
        #expect(secondLast.ids(on: "a") == ids["a"])
        #expect(try tabs[1].snapshot().status?.connected == true)
        #expect(server.isHealthy())
        await server.stop()
    }

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

    /// The page at `/`: the server's figures, the channels (after the token is given, as the route requires),
    /// a channel watched live while the page's form publishes to it, a sequence drawn as it arrives; and a
    /// screenshot that shows all this (kept at `SPOUT_UI_SCREENSHOT` when that is set, for docs/ui.png).
    @Test func thePageShowsTheServiceLiveAndObeysTheRights() async throws {
        let server = try SpoutTestServer { $0.channels.publishTokens = ["sesame"] }
        let publisher = try ChannelHTTP(port: server.port)
        let token = ["Authorization: Bearer sesame"]
        for (channel, count) in [("chat.lobby", 12), ("news.sport", 4)] {
            _ = try publisher.publishIDs(channel, channelBody(1...count), headers: token)
        }
        for number in 1...3 {
            _ = try publisher.publishIDs(
                "weather",
                #"{"data":{"temperature":\#(18 + number)},"event":"reading"}"#,
                headers: token
            )
        }
        let browser = try HeadlessChromium.launch()
        defer { browser.terminate() }
        let blank = try browser.openPage(url: "about:blank")
        let page = try browser.openPage(url: "http://127.0.0.1:\(server.port)/")
        for tab in [blank, page] {
            try tab.call(
                "Emulation.setDeviceMetricsOverride",
                ["width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": false]
            )
        }
        func wait(_ what: String, _ condition: String) throws -> String {
            try page.evaluate(
                """
                new Promise((resolve, reject) => {
                    const started = performance.now();
                    const poll = () => {
                        const value = (() => { \(condition) })();
                        if (value) resolve(String(value));
                        else if (performance.now() - started > \(8000 * TestTiming.scale)) reject(new Error(\(Self.literal(what)) + ": " + document.body.innerText.slice(0, 3000)));
                        else setTimeout(poll, 20);
                    };
                    poll();
                })
                """,
                timeout: .seconds(10)
            )
        }

        #expect(try page.evaluate("document.title") == "Spout")
        // The figures, from /metrics: the page's own request count makes requests/s positive.
        let figures = try wait(
            "the figures",
            "const r = document.getElementById('fig-requests').textContent; return r !== '–' && r"
        )
        #expect(Double(figures) != nil)
        #expect(try page.evaluate("document.getElementById('version').textContent").hasPrefix("version "))
        // GET /channels needs the publish token: without it the page says so, and publishing is refused.
        #expect(
            try wait("the refusal", "return document.getElementById('channels-note').textContent").contains(
                "needs a publish token"
            )
        )
        try page.evaluate(
            """
            document.getElementById('publish-channel').value = 'weather';
            document.getElementById('publish-event').value = 'reading';
            document.getElementById('publish-data').value = '{"temperature": 30}';
            document.getElementById('publish-form').requestSubmit(); 'sent'
            """
        )
        #expect(
            try wait(
                "the refused publish",
                "const t = document.getElementById('publish-result').textContent; return t.startsWith('4') && t"
            ).hasPrefix("401")
        )
        // With the token, the channel is listed.
        try page.evaluate(
            "const f = document.getElementById('token'); f.value = 'sesame'; f.dispatchEvent(new Event('change')); 'set'"
        )
        let row = try wait(
            "the weather row",
            "const r = document.querySelector('tr[data-channel=\"weather\"]'); return r && r.innerText"
        )
        #expect(row.contains("weather") && row.contains("-3"), "its last id")

        // Watch it (a click on its row), then publish from the page's form: the event comes back live.
        try page.evaluate("document.querySelector('tr[data-channel=\"weather\"]').click(); 'clicked'")
        _ = try wait(
            "the live connection",
            "return document.getElementById('live-status').textContent.includes('open')"
        )
        try page.evaluate("document.getElementById('publish-form').requestSubmit(); 'sent'")
        #expect(
            try wait(
                "the publish",
                "const t = document.getElementById('publish-result').textContent; return t.startsWith('2') && t"
            ).hasPrefix("202")
        )
        let live = try wait(
            "the event live",
            "const l = document.getElementById('live-log').innerText; return l.includes('{\"temperature\":30}') && l"
        )
        #expect(live.contains("weather") && live.contains("reading"))

        // A sequence, drawn as it arrives.
        try page.evaluate(
            """
            document.getElementById('sequence-name').value = 'naturals';
            document.getElementById('sequence-interval').value = '5';
            document.getElementById('sequence-count').value = '40';
            document.getElementById('sequence-form').requestSubmit(); 'started'
            """
        )
        let note = try wait(
            "the sequence's end",
            "const t = document.getElementById('sequence-note').textContent; return t.includes('ended') && t"
        )
        #expect(note == "naturals[39] = 39 · ended: completed")
        let painted = try page.evaluate(
            """
            (() => {
                const canvas = document.getElementById('sequence-chart');
                const pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
                let blue = 0;
                for (let index = 0; index < pixels.length; index += 4) {
                    if (pixels[index + 2] > 200 && pixels[index] < 100 && pixels[index + 3] > 0) blue++;
                }
                return String(blue);
            })()
            """
        )
        #expect((Int(painted) ?? 0) > 1000, "the bars are drawn (\(painted) blue pixels)")

        // The figures follow: the live view's connection is the one open stream.
        _ = try wait("one open stream", "return document.getElementById('fig-streams').textContent === '1'")
        if ProcessInfo.processInfo.environment["SPOUT_UI_SCREENSHOT"].map({ !$0.isEmpty }) == true {
            // For the docs' picture only: some traffic for the rates and the chart, one batch a second.
            for round in 1...8 {
                _ = try publisher.publishIDs("chat.lobby", channelBody((1...(10 * round)).map { $0 }), headers: token)
                _ = try publisher.publishIDs("news.sport", channelBody([round]), headers: token)
                let reading = #"{"data":{"temperature":\#(20 + round % 3)},"event":"reading"}"#
                _ = try publisher.publishIDs("weather", reading, headers: token)
                try page.evaluate("new Promise((resolve) => setTimeout(() => resolve('waited'), 1000))")
            }
        }
        // The screenshot: a PNG of the viewport, far from blank (a blank page of the same size compresses to
        // a fraction of it).
        let shot = try Self.screenshot(page)
        let empty = try Self.screenshot(blank)
        #expect(Array(shot.prefix(8)) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        #expect(Self.pngSize(shot) == [1280, 900])
        #expect(shot.count > 10 * empty.count, "\(shot.count) bytes against \(empty.count) for a blank page")
        if let path = ProcessInfo.processInfo.environment["SPOUT_UI_SCREENSHOT"], !path.isEmpty {
            try Data(shot).write(to: URL(fileURLWithPath: path))
        }
        #expect(server.isHealthy())
        await server.stop()
    }

    /// A PNG of the tab's viewport.
    static func screenshot(_ page: BrowserPage) throws -> [UInt8] {
        let result = try page.call("Page.captureScreenshot", ["format": "png"], timeout: .seconds(20))
        guard let text = result["data"] as? String, let data = Data(base64Encoded: text) else {
            throw HeadlessChromium.Failure.malformedReply(method: "Page.captureScreenshot")
        }
        return [UInt8](data)
    }

    /// A PNG's width and height, from its IHDR chunk.
    static func pngSize(_ png: [UInt8]) -> [Int] {
        guard png.count >= 24 else { return [] }
        func integer(at offset: Int) -> Int {
            png[offset..<(offset + 4)].reduce(0) { $0 << 8 | Int($1) }
        }
        return [integer(at: 16), integer(at: 20)]
    }

    /// `text` as a JavaScript string literal.
    static func literal(_ text: String) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: [text])) ?? Data("[\"\"]".utf8)
        return String(decoding: data.dropFirst().dropLast(), as: UTF8.self)
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
                const events = (log) => log.filter((m) => m.kind === "event");
                const snapshot = () => JSON.stringify({ log, status });
                \(BrowserPage.waiters(over: "log, status, events"))
                const options = Object.assign(\(options), {
                    onStatus(next) { status = next; check(); },
                });
                window.test = {
                    unsubscribe: spout.subscribe(\(list), (message) => { log.push(message); check(); }, options),
                    until,
                    snapshot,
                };
                return "subscribed";
            })()
            """
        try page.install(script, answering: "subscribed", method: "subscribe")
    }

    /// Waits until `condition` (JavaScript over `log`, `status` and `events(log)`) holds, and returns what the tab
    /// saw by then. The tab gives up after 8 s, the pipe read after 10 s (both stretched under sanitizers).
    func until(_ what: String, _ condition: String) throws -> Snapshot {
        try page.until(what, "window.test", over: "log, status, events", condition)
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

extension SpoutTestServer {
    /// The subscribers of each of `channels` as `GET /channels` lists them (0 for a channel it does not list).
    func subscribers(_ channels: [String]) -> [Int] {
        guard let response = try? get("/channels"), response.status == 200,
            let list = RouteTest.object(response.body)["channels"] as? [[String: Any]]
        else { return [] }
        return channels.map { name in
            list.first { $0["name"] as? String == name }?["subscribers"] as? Int ?? 0
        }
    }

    /// `spout_active_streams` from `/metrics`: the streaming responses open now (-1 when it cannot be read).
    var activeStreams: Int {
        guard let response = try? get("/metrics"), response.status == 200 else { return -1 }
        for line in response.text.split(separator: "\n") where line.hasPrefix("spout_active_streams ") {
            return Double(line.split(separator: " ").last ?? "").map { Int($0) } ?? -1
        }
        return -1
    }
}
