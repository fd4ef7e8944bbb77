import Dispatch
import EventLoops
import Glibc
import TestSupport
import Testing

@testable import HTTPServer

/// `maxConnections` clamped to the open-file limit, and `503` + `Retry-After` when the limit or the process's
/// descriptors run out.
@Suite(.offPool) struct ConnectionLimitTests {
    struct LimitCase: Sendable, CustomTestStringConvertible {
        var configured: Int
        var openFileLimit: Int
        var reserved: Int
        var loops: Int
        var expectedReserve: Int
        var expectedEffective: Int

        var testDescription: String { "\(configured) under \(openFileLimit), reserve \(reserved)+\(loops)" }

        /// `configured` connections `under` an open-file limit, `reserving` descriptors plus one per loop: `gives`
        /// the expected reserve and effective limit.
        init(
            _ configured: Int,
            under limit: Int,
            reserving reserved: Int,
            loops: Int,
            gives reserve: Int,
            _ effective: Int
        ) {
            self.configured = configured
            openFileLimit = limit
            self.reserved = reserved
            self.loops = loops
            expectedReserve = reserve
            expectedEffective = effective
        }
    }

    @Test(arguments: [
        LimitCase(20_000, under: 20_000, reserving: 128, loops: 2, gives: 130, 19_870),
        LimitCase(100, under: 20_000, reserving: 128, loops: 2, gives: 130, 100),
        LimitCase(20_000, under: 64, reserving: 128, loops: 2, gives: 32, 32),
        LimitCase(20_000, under: 1, reserving: 128, loops: 2, gives: 0, 1),
        LimitCase(20_000, under: 0, reserving: 128, loops: 2, gives: 0, 1),
        LimitCase(0, under: 1024, reserving: 128, loops: 2, gives: 130, 1),
        LimitCase(.max, under: .max, reserving: .max, loops: .max, gives: .max / 2, .max - .max / 2),
        LimitCase(500, under: 1024, reserving: -5, loops: 0, gives: 0, 500),
    ])
    func limitIsTheSmallerOfConfiguredAndWhatDescriptorsAllow(_ row: LimitCase) {
        let limit = Server.ConnectionLimit(
            configured: row.configured,
            openFileLimit: row.openFileLimit,
            reserved: row.reserved,
            loopCount: row.loops
        )
        #expect(limit.reservedDescriptors == row.expectedReserve)
        #expect(limit.effective == row.expectedEffective)
        #expect(limit.isClamped == (row.expectedEffective < row.configured))
    }

    @Test func clampIsDescribedWithItsReasons() {
        let limit = Server.ConnectionLimit(configured: 20_000, openFileLimit: 20_000, reserved: 128, loopCount: 2)
        #expect(
            limit.description
                == "maxConnections 20000 clamped to 19870 (open-file limit 20000, 130 descriptors reserved)"
        )
    }

    @Test func serverClampsToTheProcessOpenFileLimit() throws {
        let server = try TestServer(configuration: { $0.maxConnections = .max })
        defer { server.stop() }
        var limit = rlimit()
        #expect(getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0)
        let soft = Int(clamping: limit.rlim_cur)
        let connectionLimit = server.server.connectionLimit
        #expect(connectionLimit.openFileLimit == soft)
        #expect(connectionLimit.isClamped)
        #expect(connectionLimit.effective == soft - connectionLimit.reservedDescriptors)
        #expect(connectionLimit.reservedDescriptors == min(128 + 2, soft / 2))
        try server.expectHealthy()
    }

    /// With `sendsFirst`, the rejected client sends its request before reading: unread input at close would turn
    /// the server's FIN into a reset that can destroy the 503 in flight.
    @Test(arguments: [false, true])
    func connectionBeyondTheLimitGets503WithRetryAfter(sendsFirst: Bool) throws {
        let server = try TestServer(configuration: { $0.maxConnections = 1 })
        defer { server.stop() }
        let first = try server.connect()
        try first.sendGet("/health")
        #expect(try first.readResponse().status == 200)
        let second = try server.connect()
        if sendsFirst {
            try second.sendGet("/health", headers: ["X-Padding: " + String(repeating: "p", count: 2000)])
        }
        let rejected = try second.readResponse()
        #expect(rejected.status == 503)
        #expect(rejected.header("retry-after") == "1")
        #expect(rejected.header("connection")?.lowercased() == "close")
        #expect(rejected.text == "too many connections\n")
        #expect(second.waitForClose())
    }

    // MARK: Out of descriptors (EMFILE injected at the accept seam)

    @Test func acceptFailingWithEMFILEAnswers503FromTheSpareSlot() throws {
        let injected = TestBox(0)
        let server = try InjectingServer(failures: injected)
        defer { server.stop() }
        for round in 1...2 {  // the second round shows the spare was taken back after the first
            injected.update { $0 = 1 }
            let client = try LoopbackClient(port: server.port)
            let response = try client.readResponse()
            #expect(response.status == 503, "round \(round)")
            #expect(response.header("retry-after") == "1", "round \(round)")
            #expect(response.text == "out of file descriptors\n", "round \(round)")
            #expect(client.waitForClose(), "round \(round)")
            #expect(injected.value == 0, "round \(round)")
        }
        let healthy = try LoopbackClient(port: server.port)
        try healthy.sendGet("/health")
        #expect(try healthy.readResponse().status == 200)
    }

    @Test func persistentEMFILEBacksOffInsteadOfSpinning() throws {
        let injected = TestBox(Int.max)
        let calls = TestBox<[UInt64]>([])
        let fifthCall = TestSignal()
        let server = try InjectingServer(failures: injected) {
            let count = calls.update { calls in
                calls.append(DispatchTime.now().uptimeNanoseconds)
                return calls.count
            }
            if count == 5 { fifthCall.signal() }
        }
        defer { server.stop() }
        let client = try LoopbackClient(port: server.port)  // waits in the backlog; the listener stays readable
        #expect(fifthCall.wait(timeout: .seconds(10)))
        let times = calls.value
        // Two calls per attempt (the accept and the one from the spare slot), then a 100 ms pause: a loop that
        // spun would make its fifth call within microseconds.
        #expect(times[4] - times[0] >= 150_000_000, "accept calls at \(times.map { ($0 - times[0]) / 1_000_000 }) ms")
        injected.update { $0 = 0 }
        try client.sendGet("/health")
        // The loop may be between an injected EMFILE and its accept from the spare slot when the injection
        // stops: that accept is real, and answers this client 503. The next connection is served.
        let first = try client.readResponse(timeout: .seconds(5))
        if first.status == 503 {
            #expect(first.text == "out of file descriptors\n")
            let again = try LoopbackClient(port: server.port)
            try again.sendGet("/health")
            #expect(try again.readResponse(timeout: .seconds(5)).status == 200)
        } else {
            #expect(first.status == 200)
        }
    }
}

/// A server whose accept call fails with `EMFILE` while `failures` is positive (decrementing it), and otherwise
/// accepts for real; `onAccept` sees every call. Only a call that finds a connection waiting takes a failure: a
/// late call left from the previous round (the server's accept loop after its `503`, a back-off retry) must not
/// use up the next round's failure before that round's client has connected, or the client is accepted for
/// real and waits for a `503` that never comes (seen once under ThreadSanitizer).
private struct InjectingServer {
    let server: Server
    var port: Int { server.port }

    init(failures: TestBox<Int>, onAccept: @escaping @Sendable () -> Void = {}) throws {
        var configuration = Server.Configuration(host: "127.0.0.1", port: 0)
        configuration.maxConnections = 100
        server = try Server.start(
            configuration: configuration,
            group: EventLoopGroup(loopCount: 1),
            acceptor: { listener throws(IOError) in
                onAccept()
                var waiting = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
                let hasConnection = poll(&waiting, 1, 0) == 1 && waiting.revents & Int16(POLLIN) != 0
                let fail = failures.update { remaining in
                    guard remaining > 0, hasConnection else { return false }
                    if remaining != .max { remaining -= 1 }
                    return true
                }
                if fail { throw IOError(errno: EMFILE, call: "accept4") }
                return try Socket.accept(listener)
            },
            handler: { _, responder in
                responder.respond(headers: ["Content-Type": "text/plain"], body: "ok")
            }
        )
    }

    func stop() {
        let done = TestSignal()
        server.shutdown(deadline: .seconds(2)) { done.signal() }
        #expect(done.wait(timeout: .seconds(7)))
    }
}
