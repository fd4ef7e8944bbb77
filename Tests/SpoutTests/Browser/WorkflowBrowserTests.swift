import Foundation
import TestSupport
import Testing

@testable import Spout

/// `/workflow/{userId}` in a real browser's `EventSource` (Debian's `chromium`, headless, on a page of
/// another origin): every event has an id, the stream ends with the `end` frame, and the reconnect that
/// follows — `EventSource` reconnects after any close — gets `204`, which stops it for good instead of
/// rerunning the four-call pipeline every few seconds.
///
/// In ``EventSourceBrowserTests``, so it shares that suite's traits: skipped when no `chromium` is
/// installed unless `SPOUT_REQUIRE_BROWSER` is set, and serialized with the other browser tests, one
/// browser at a time.
extension EventSourceBrowserTests {
    /// What the page's `EventSource` dispatched from a workflow.
    struct WorkflowSeen: Decodable {
        struct Event: Decodable {
            let type: String
            let id: String
            let data: String
        }
        /// `step`, `summary` and `end` events in order.
        let events: [Event]
        /// `readyState` at each `error` event: 0 reconnecting, 2 closed for good.
        let errors: [Int]
        let opens: Int
        let readyState: Int
    }

    @Test func aWorkflowGivesEveryEventAnIDEndsWithTheEndFrameAndStopsReconnecting() async throws {
        let server = try SpoutTestServer { $0.sse.retryMilliseconds = 100 }
        let harness = try BrowserHarness()
        defer { harness.close() }
        let url = "http://127.0.0.1:\(server.port)/workflow/1"
        let answer = try harness.page.evaluate(
            """
            (() => {
                const log = { events: [], errors: [], opens: 0 };
                const source = new EventSource(\(String(decoding: try JSONEncoder().encode(url), as: UTF8.self)));
                const snapshot = () => JSON.stringify({ ...log, readyState: source.readyState });
                let settle;
                const closed = new Promise((resolve) => { settle = resolve; });
                source.onopen = () => { log.opens += 1; };
                for (const type of ["step", "summary", "end"]) {
                    source.addEventListener(type, (event) => {
                        log.events.push({ type, id: event.lastEventId, data: event.data });
                    });
                }
                source.onerror = () => {
                    log.errors.push(source.readyState);
                    if (source.readyState === 2) settle(snapshot());
                };
                window.workflow = {
                    closed(milliseconds) {
                        return Promise.race([
                            closed,
                            new Promise((_, reject) => setTimeout(
                                () => reject(new Error("not closed; the page saw " + snapshot())), milliseconds)),
                        ]);
                    },
                };
                return "watching";
            })()
            """
        )
        #expect(answer == "watching")
        let text = try harness.page.evaluate("window.workflow.closed(8000)", timeout: .seconds(10))
        let seen = try JSONDecoder().decode(WorkflowSeen.self, from: Data(text.utf8))

        #expect(seen.events.map(\.type) == ["step", "step", "step", "step", "summary", "end"], "\(text)")
        #expect(seen.events.map(\.id) == ["1", "2", "3", "4", "5", "5"])
        #expect(seen.events.last?.data == #"{"reason":"completed"}"#)
        #expect(seen.opens == 1)
        #expect(seen.errors == [0, 2], "one reconnect (CONNECTING), then CLOSED by the 204")
        #expect(seen.readyState == 2)

        #expect(eventually { server.requests(to: "/workflow/1").count == 2 })
        #expect(server.requests(to: "/workflow/1").map(\.status) == [200, 204])
        // CLOSED is final: no request follows within ten reconnection delays.
        #expect(!eventually(timeout: .seconds(1)) { server.requests(to: "/workflow/1").count > 2 })
        #expect(server.isHealthy())
        await server.stop()
    }
}
