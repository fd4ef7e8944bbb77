import Foundation
import Reactive
import Synchronization
import TestSupport
import Testing

@testable import Spout

/// `channels.jwt.jwksURL`: the set fetched at start, on a timer and on an unknown `kid` (at most once per
/// `jwksMinRefreshSeconds`), a failed fetch keeping the keys, and the file's keys kept beside the URL's.
@Suite(.offPool) struct JWKSRefresherTests {
    /// A fetch the test completes by hand, a clock it sets, and retries it runs when it chooses (virtual time).
    final class Fake: Sendable {
        private let pending = LockedState<[@Sendable (Result<[UInt8], JWKSet.Failure>) -> Void]>([])
        private let time = LockedState(0.0)
        private let scheduled = LockedState<[(seconds: Double, action: @Sendable () -> Void)]>([])

        var fetch: JWKSRefresher.Fetch {
            { [self] done in pending.withLock { $0.append(done) } }
        }
        var clock: @Sendable () -> Double { { [self] in time.withLock { $0 } } }
        var schedule: JWKSRefresher.Schedule {
            { [self] seconds, action in scheduled.withLock { $0.append((seconds, action)) } }
        }
        var waiting: Int { pending.withLock { $0.count } }
        /// The waits of the retries scheduled and not yet run.
        var retryWaits: [Double] { scheduled.withLock { $0.map(\.seconds) } }

        /// Runs the oldest scheduled retry, as if its wait had passed.
        func runRetry() {
            let action = scheduled.withLock { $0.removeFirst().action }
            action()
        }

        func set(_ seconds: Double) { time.withLock { $0 = seconds } }

        /// Answers the oldest fetch.
        func answer(_ document: String?) {
            let done = pending.withLock { $0.removeFirst() }
            done(document.map { .success(Array($0.utf8)) } ?? .failure(JWKSet.Failure(reason: "refused")))
        }
    }

    static let secretA = TestTokens.secret
    static let secretB = Array("abcdefghijklmnopqrstuvwxyz012345".utf8)
    static let secretC = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ012345".utf8)
    static let claims = #"{"sub":"s","spout":{"publish":["*"]}}"#

    static func verifies(_ verifier: TokenVerifier, _ secret: [UInt8], kid: String) -> Bool {
        (try? verifier.verify(TestTokens.hmac(claims, secret: secret, kid: kid), now: TestTokens.now).get()) != nil
    }

    @Test func anUnknownKidRefreshesAtMostOncePerIntervalAndAFailureKeepsTheKeys() throws {
        let fileKeys = try TestTokens.keys(TestTokens.octSet(kid: "file"))
        let verifier = TokenVerifier(keys: fileKeys)
        let fake = Fake()
        let refresher = JWKSRefresher(
            url: "http://127.0.0.1:1/jwks",
            fileKeys: fileKeys,
            verifier: verifier,
            refreshSeconds: 3_600,
            minRefreshSeconds: 30,
            fetch: fake.fetch,
            clock: fake.clock,
            schedule: fake.schedule
        )
        defer { refresher.stop() }
        refresher.start()
        #expect(fake.waiting == 1)
        fake.answer(TestTokens.octSet(Self.secretB, kid: "b"))
        // The file's key and the URL's.
        #expect(Self.verifies(verifier, Self.secretA, kid: "file"))
        #expect(Self.verifies(verifier, Self.secretB, kid: "b"))
        #expect(!Self.verifies(verifier, Self.secretC, kid: "c"))

        // An unknown kid: one fetch, none more while it is in flight.
        fake.set(100)
        refresher.keyUnknown()
        refresher.keyUnknown()
        #expect(fake.waiting == 1)
        fake.answer(TestTokens.octSet(Self.secretC, kid: "c"))
        #expect(Self.verifies(verifier, Self.secretC, kid: "c"))
        #expect(!Self.verifies(verifier, Self.secretB, kid: "b"))  // rotated out
        #expect(Self.verifies(verifier, Self.secretA, kid: "file"))

        // Within the interval, a flood of unknown kids fetches nothing.
        for second in stride(from: 100.0, to: 130, by: 0.5) {
            fake.set(second)
            refresher.keyUnknown()
        }
        #expect(fake.waiting == 0)
        #expect(refresher.fetchesStarted == 2)
        fake.set(130)
        refresher.keyUnknown()
        #expect(fake.waiting == 1)

        // A failed fetch keeps the keys and says why.
        fake.answer(nil)
        #expect(refresher.lastFailure == "refused")
        #expect(Self.verifies(verifier, Self.secretC, kid: "c"))
        // So does a document that is no key set.
        fake.set(200)
        refresher.keyUnknown()
        fake.answer(#"{"keys": 3}"#)
        #expect(refresher.lastFailure?.contains("keys member is not a list") == true)
        #expect(Self.verifies(verifier, Self.secretC, kid: "c"))

        // The same document again changes nothing: the verified tokens are kept.
        fake.set(300)
        refresher.keyUnknown()
        #expect(verifier.cachedTokens > 0)
        fake.answer(TestTokens.octSet(Self.secretC, kid: "c"))
        #expect(refresher.lastFailure == nil)
        #expect(verifier.cachedTokens > 0)
    }

    /// A failed fetch is retried with a doubling wait, never shorter than jwksMinRefreshSeconds, at most
    /// maxRetries times in a row and never when the timer comes first; the keys stay meanwhile, and a good fetch
    /// ends the retries and starts the count again.
    @Test func aFailedFetchIsRetriedWithBoundedBackoff() throws {
        let fileKeys = try TestTokens.keys(TestTokens.octSet(kid: "file"))
        let verifier = TokenVerifier(keys: fileKeys)
        let fake = Fake()
        let refresher = JWKSRefresher(
            url: "http://127.0.0.1:1/jwks",
            fileKeys: fileKeys,
            verifier: verifier,
            refreshSeconds: 3_600,
            minRefreshSeconds: 3,
            fetch: fake.fetch,
            clock: fake.clock,
            schedule: fake.schedule
        )
        defer { refresher.stop() }
        refresher.start()
        fake.answer(TestTokens.octSet(Self.secretB, kid: "b"))
        #expect(fake.retryWaits.isEmpty)
        // The key server fails: each failure schedules one retry, waiting 3 (the minimum), 3, 4, 8, 16 seconds.
        fake.set(100)
        refresher.keyUnknown()
        var waits: [Double] = []
        for _ in 0..<JWKSRefresher.maxRetries {
            fake.answer(nil)
            #expect(fake.retryWaits.count == 1)
            waits += fake.retryWaits
            #expect(Self.verifies(verifier, Self.secretB, kid: "b"))  // the keys are kept meanwhile
            fake.runRetry()
            #expect(fake.waiting == 1)
        }
        #expect(waits == [3, 3, 4, 8, 16])
        // Past maxRetries failures in a row, nothing more until the timer (or an unknown kid).
        fake.answer(nil)
        #expect(fake.retryWaits.isEmpty)
        #expect(fake.waiting == 0)
        #expect(refresher.fetchesStarted == 2 + JWKSRefresher.maxRetries)
        // A good fetch (here an unknown kid's) starts the count again: the next failure waits the least.
        fake.set(200)
        refresher.keyUnknown()
        fake.answer(TestTokens.octSet(Self.secretC, kid: "c"))
        #expect(Self.verifies(verifier, Self.secretC, kid: "c"))
        fake.set(300)
        refresher.keyUnknown()
        fake.answer(nil)
        #expect(fake.retryWaits == [3])
        // A retry that finds a fetch in flight leaves it alone; that fetch's failure schedules the next one.
        fake.set(400)
        refresher.keyUnknown()
        fake.runRetry()
        #expect(fake.waiting == 1)
        fake.answer(nil)
        #expect(fake.retryWaits == [3])
        // A wait that would reach the timer's refresh is not scheduled.
        let slowTimer = JWKSRefresher(
            url: "http://127.0.0.1:1/jwks",
            fileKeys: fileKeys,
            verifier: verifier,
            refreshSeconds: 10,
            minRefreshSeconds: 0,
            fetch: fake.fetch,
            clock: fake.clock,
            schedule: fake.schedule
        )
        #expect((1...JWKSRefresher.maxRetries).map { slowTimer.retryDelay(afterFailures: $0) } == [1, 2, 4, 8, nil])
        #expect(slowTimer.retryDelay(afterFailures: 0) == nil)
    }

    /// Against a loopback key server that fails, then serves the set: the retry (its wait run by the test's
    /// scheduler) fetches the new keys without a timer or an unknown kid.
    @Test func aRetryFetchesFromALoopbackServerThatRecovered() throws {
        let jwks = try JWKSServer("gone")
        defer { jwks.stop() }
        jwks.serve("unavailable", status: 503)
        let verifier = TokenVerifier(keys: JWKSet(keys: []))
        let fake = Fake()
        let url = try #require(URL(string: jwks.url))
        let refresher = JWKSRefresher(
            url: jwks.url,
            fileKeys: JWKSet(keys: []),
            verifier: verifier,
            refreshSeconds: 3_600,
            minRefreshSeconds: 0,
            fetch: JWKSRefresher.fetch(url: url, session: UpstreamSession()),
            schedule: fake.schedule
        )
        defer { refresher.stop() }
        refresher.start()
        #expect(eventually { fake.retryWaits == [1] })
        #expect(refresher.lastFailure?.contains("status 503") == true)
        #expect(!Self.verifies(verifier, Self.secretB, kid: "b"))
        jwks.serve(TestTokens.octSet(Self.secretB, kid: "b"))
        fake.runRetry()
        #expect(eventually { Self.verifies(verifier, Self.secretB, kid: "b") })
        #expect(jwks.requests == 2)
        #expect(refresher.lastFailure == nil)
        #expect(fake.retryWaits.isEmpty)
    }

    @Test func theTimerRefreshes() throws {
        let verifier = TokenVerifier(keys: JWKSet(keys: []))
        let fake = Fake()
        let refresher = JWKSRefresher(
            url: "http://127.0.0.1:1/jwks",
            fileKeys: JWKSet(keys: []),
            verifier: verifier,
            refreshSeconds: 1,
            minRefreshSeconds: 30,
            fetch: fake.fetch
        )
        defer { refresher.stop() }
        refresher.start()
        #expect(fake.waiting == 1)
        fake.answer(TestTokens.octSet(Self.secretB, kid: "b"))
        #expect(eventually { fake.waiting == 1 })
        fake.answer(TestTokens.octSet(Self.secretC, kid: "c"))
        #expect(Self.verifies(verifier, Self.secretC, kid: "c"))
        refresher.stop()
        #expect(refresher.fetchesStarted >= 2)
    }
}

/// The JWKS URL on a live service, served by a real loopback HTTP server.
@Suite(.offPool) struct JWKSURLHTTPTests {
    static func token(kid: String, secret: [UInt8]) -> String {
        TestTokens.hmac(
            #"{"sub":"s","exp":\#(ChannelTokenHTTPTests.future),"spout":{"publish":["*"]}}"#,
            secret: secret,
            kid: kid
        )
    }

    static func publish(_ http: ChannelHTTP, _ token: String) throws -> LoopbackClient.Response {
        try http.publish("keys", channelBody([1]), headers: ["Authorization: Bearer \(token)"])
    }

    @Test func aRotatedKeyVerifiesAfterTheRefreshAnUnknownKidAsksFor() async throws {
        let jwks = try JWKSServer(TestTokens.octSet(JWKSRefresherTests.secretA, kid: "k1"))
        defer { jwks.stop() }
        let server = try SpoutTestServer {
            $0.channels.jwt.jwksURL = jwks.url
            $0.channels.jwt.jwksMinRefreshSeconds = 0
        }
        let http = try ChannelHTTP(port: server.port)
        defer { http.close() }
        let first = Self.token(kid: "k1", secret: JWKSRefresherTests.secretA)
        #expect(eventually { (try? Self.publish(http, first).status) == 202 })
        #expect(jwks.requests == 1)

        jwks.serve(TestTokens.octSet(JWKSRefresherTests.secretB, kid: "k2"))
        let rotated = Self.token(kid: "k2", secret: JWKSRefresherTests.secretB)
        let before = try Self.publish(http, rotated)
        #expect(before.status == 401)
        #expect(ChannelTokenHTTPTests.problemType(before) == "/problems/token-key-unknown")
        #expect(eventually { (try? Self.publish(http, rotated).status) == 202 })
        #expect(try Self.publish(http, first).status == 401)
        let metrics = try server.get("/metrics").text
        #expect(metrics.contains(#"spout_jwks_fetches_total{outcome="ok"} 2"#), "\(metrics)")
        await server.stop()
    }

    @Test func aFloodOfUnknownKidsFetchesAtMostOncePerInterval() async throws {
        let jwks = try JWKSServer(TestTokens.octSet(JWKSRefresherTests.secretA, kid: "k1"))
        defer { jwks.stop() }
        let server = try SpoutTestServer {
            $0.channels.jwt.jwksURL = jwks.url
            $0.channels.jwt.jwksMinRefreshSeconds = 3_600
        }
        let http = try ChannelHTTP(port: server.port)
        defer { http.close() }
        let known = Self.token(kid: "k1", secret: JWKSRefresherTests.secretA)
        #expect(eventually { (try? Self.publish(http, known).status) == 202 })
        let refresher = try #require(server.service.channels.access.keyRefresher)
        for round in 0..<2 {
            for index in 0..<50 {
                let unknown = Self.token(kid: "x\(round)-\(index)", secret: JWKSRefresherTests.secretB)
                #expect(try Self.publish(http, unknown).status == 401)
            }
            // The start's fetch and one for the whole flood, the second round included.
            #expect(refresher.fetchesStarted == 2)
            #expect(eventually { jwks.requests == 2 })
        }
        #expect(try Self.publish(http, known).status == 202)
        await server.stop()
    }

    @Test func aFailedFetchKeepsTheKeysAndIsLoggedAndCounted() async throws {
        let jwks = try JWKSServer(TestTokens.octSet(JWKSRefresherTests.secretA, kid: "k1"))
        defer { jwks.stop() }
        let file = try TestTokens.temporaryFile(TestTokens.octSet(JWKSRefresherTests.secretC, kid: "file"))
        let server = try SpoutTestServer {
            $0.channels.jwt.jwksURL = jwks.url
            $0.channels.jwt.jwksFile = file
            $0.channels.jwt.jwksMinRefreshSeconds = 0
        }
        let http = try ChannelHTTP(port: server.port)
        defer { http.close() }
        let known = Self.token(kid: "k1", secret: JWKSRefresherTests.secretA)
        #expect(eventually { (try? Self.publish(http, known).status) == 202 })
        // The file's key works beside the URL's.
        #expect(try Self.publish(http, Self.token(kid: "file", secret: JWKSRefresherTests.secretC)).status == 202)
        jwks.serve("gone", status: 500)
        let unknown = Self.token(kid: "new", secret: JWKSRefresherTests.secretB)
        #expect(try Self.publish(http, unknown).status == 401)
        #expect(eventually { server.events.lines.contains { $0.contains(#""event":"jwks_fetch_failed""#) } })
        let refused = try Self.publish(http, unknown)
        #expect(String(decoding: refused.body, as: UTF8.self).contains("the JWKS URL could not be fetched"))
        #expect(try Self.publish(http, known).status == 202)
        let metrics = try server.get("/metrics").text
        #expect(metrics.contains(#"spout_jwks_fetches_total{outcome="failed"} "#))
        #expect(!metrics.contains(#"spout_jwks_fetches_total{outcome="failed"} 0"#))
        await server.stop()
    }

    /// The JWKS URL has its own check: a query is allowed (the upstream's base URL refuses one), a fragment or a
    /// URL that is not http(s) with a host is refused with a message about the JWK Set, not the demo data.
    @Test func theJWKSURLHasItsOwnCheck() throws {
        func load(_ environment: [String: String]) throws -> SpoutConfiguration? {
            guard case .run(let configuration) = try SpoutConfiguration.load(arguments: [], environment: environment)
            else { return nil }
            return configuration
        }
        let query = "https://auth.example/keys?tenant=acme&format=jwks"
        #expect(try load(["SPOUT_CHANNELS_JWT_JWKS_URL": query])?.channels.jwt.jwksURL == query)
        var fromFile = SpoutConfiguration()
        try fromFile.apply(json: Data(#"{"channels":{"jwt":{"jwksURL":"\#(query)"}}}"#.utf8), source: "test.json")
        #expect(fromFile.channels.jwt.jwksURL == query)
        for refused in ["https://auth.example/keys#latest", "ftp://auth.example/keys", "/keys", "https:///keys", "x"] {
            #expect {
                try load(["SPOUT_CHANNELS_JWT_JWKS_URL": refused])
            } throws: { error in
                guard case .invalidValue(let key, _, let expected, _) = error as? ConfigError else { return false }
                return key == "channels.jwt.jwksURL" && expected.contains("where the JWK Set is served")
                    && expected.contains("a query is allowed") && !expected.contains("demo data")
            }
        }
        // The upstream's base URL keeps its own rule and words.
        #expect {
            try load(["SPOUT_UPSTREAM_URL": "https://api.example/v1?x=1"])
        } throws: { error in
            guard case .invalidValue(let key, _, let expected, _) = error as? ConfigError else { return false }
            return key == "upstream.baseURL" && expected.contains("demo data")
        }
    }

    @Test func theURLAndItsTimingsLoadFromTheEnvironment() throws {
        guard
            case .run(let configuration) = try SpoutConfiguration.load(
                arguments: [],
                environment: [
                    "SPOUT_CHANNELS_JWT_JWKS_URL": "https://auth.example/.well-known/jwks.json",
                    "SPOUT_CHANNELS_JWT_JWKS_REFRESH_SECONDS": "60",
                    "SPOUT_CHANNELS_JWT_JWKS_MIN_REFRESH_SECONDS": "5",
                    "SPOUT_CHANNELS_MAX_SUBSCRIPTIONS_PER_SUBJECT": "4",
                ]
            )
        else {
            Issue.record("not a run")
            return
        }
        #expect(configuration.channels.jwt.jwksURL == "https://auth.example/.well-known/jwks.json")
        #expect(configuration.channels.jwt.jwksRefreshSeconds == 60)
        #expect(configuration.channels.jwt.jwksMinRefreshSeconds == 5)
        #expect(configuration.channels.maxSubscriptionsPerSubject == 4)
        #expect(configuration.channels.jwt.isEnabled)
    }
}
