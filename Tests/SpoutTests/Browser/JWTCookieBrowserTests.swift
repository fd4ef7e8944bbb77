import Foundation
import TestSupport
import Testing

@testable import Spout

/// A real browser's `EventSource` with `withCredentials: true` subscribing cross-origin with the JWT in the cookie
/// `channels.jwt.cookieName`: the page is served from one loopback origin and Spout listens on another port, so the
/// browser sends the cookie only with credentials, and reads the stream only if Spout answers with the page's own
/// origin and `Access-Control-Allow-Credentials: true` (never `*`).
///
/// Skipped without `chromium` unless `SPOUT_REQUIRE_BROWSER` is set (see ``EventSourceBrowserTests``).
@Suite(
    .serialized,
    .offPool(limited: false),
    .enabled(if: HeadlessChromium.testsEnabled),
    .timeLimit(.minutes(3 * TestTiming.scale))
)
struct JWTCookieBrowserTests {
    static let cookie = "spout_token"

    static func subscriber() -> String {
        ChannelTokenHTTPTests.token(
            #"{"sub":"browser-user","exp":\#(ChannelTokenHTTPTests.future),"spout":{"subscribe":["cookie.*"]}}"#
        )
    }

    static func publisher() -> String {
        ChannelTokenHTTPTests.token(#"{"exp":\#(ChannelTokenHTTPTests.future),"spout":{"publish":["*"]}}"#)
    }

    @Test func eventSourceWithCredentialsSubscribesWithTheCookieCrossOrigin() async throws {
        let harness = try BrowserHarness()
        defer { harness.close() }
        let server = try ChannelTokenHTTPTests.server {
            $0.channels.jwt.cookieName = Self.cookie
            $0.cors.allowedOrigins = [harness.origin]
        }
        let spout = "http://127.0.0.1:\(server.port)"
        #expect(spout != harness.origin, "another origin: the request is cross-origin")
        // The cookie is the host's (127.0.0.1), so the browser has it for Spout's port too, but sends it
        // cross-origin only with credentials.
        _ = try harness.page.evaluate(#"document.cookie = "\#(Self.cookie)=\#(Self.subscriber()); path=/"; "set""#)

        // Without credentials no cookie goes: 401, and EventSource gives up (CLOSED).
        try harness.watch("\(spout)/channels/cookie.a", closeOnEnd: false, withCredentials: false)
        let refused = try harness.until("the refusal", "log.errors.length >= 1 && source.readyState === 2")
        #expect(refused.opens.isEmpty)
        try harness.closeSource()

        // With credentials: the stream opens, and a published event arrives.
        try harness.watch("\(spout)/channels/cookie.a", closeOnEnd: false, withCredentials: true)
        _ = try harness.until("the open stream", "log.opens.length >= 1")
        let http = try ChannelHTTP(port: server.port)
        defer { http.close() }
        _ = try http.publishIDs("cookie.a", channelBody([7]), headers: ["Authorization: Bearer \(Self.publisher())"])
        let seen = try harness.until("the event", "log.messages.length >= 1")
        #expect(seen.messages.first.map { $0.data.contains(#""n":7"#) } == true, "\(seen.messages)")
        #expect(seen.messages.first?.origin == spout)
        try harness.closeSource()

        // The cookie's rights hold: a channel its token does not grant is refused (403), so the source closes.
        try harness.watch("\(spout)/channels/other", closeOnEnd: false, withCredentials: true)
        let notGranted = try harness.until("the refused channel", "log.errors.length >= 1 && source.readyState === 2")
        #expect(notGranted.opens.isEmpty)
        try harness.closeSource()

        // The request log names the cookie's subject on the stream that was served.
        #expect(
            eventually {
                server.log.lines.contains {
                    $0.contains(#""path":"/channels/cookie.a""#) && $0.contains(#""sub":"browser-user""#)
                }
            }
        )
        await server.stop()
    }

    /// With `cors.allowedOrigins` `*`, credentials are never allowed: the browser refuses to read the stream even
    /// though the cookie is valid.
    @Test func aWildcardOriginGetsNoCredentials() async throws {
        let harness = try BrowserHarness()
        defer { harness.close() }
        let server = try ChannelTokenHTTPTests.server {
            $0.channels.jwt.cookieName = Self.cookie
            $0.cors.allowedOrigins = ["*"]
        }
        _ = try harness.page.evaluate(#"document.cookie = "\#(Self.cookie)=\#(Self.subscriber()); path=/"; "set""#)
        try harness.watch(
            "http://127.0.0.1:\(server.port)/channels/cookie.a",
            closeOnEnd: false,
            withCredentials: true
        )
        let refused = try harness.until("the refusal", "log.errors.length >= 1 && source.readyState === 2")
        #expect(refused.opens.isEmpty)
        try harness.closeSource()
        await server.stop()
    }
}
