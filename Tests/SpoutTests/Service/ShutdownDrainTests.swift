import Foundation
import Glibc
import Synchronization
import TestSupport
import Testing

@testable import Spout

/// `shutdown.delaySeconds`: between `SIGTERM` and the closing of the listener the service keeps accepting and
/// answering while `/ready` says `503 draining`, so a load balancer takes it out of rotation before any of its
/// connections are refused.
@Suite(.offPool) struct ShutdownDrainTests {
    /// Whether connecting to `port` on loopback is refused now. (The listener's descriptor is closed by the
    /// accept source's cancel handler, which may run just after `shutdown` returned: callers wait for it.)
    static func isRefused(_ port: Int) -> Bool {
        do {
            _ = try LoopbackClient(port: port)
            return false
        } catch .system(call: "connect", let code) {
            return code == ECONNREFUSED
        } catch {
            return false
        }
    }

    @Test func duringTheDelayReadinessIs503AndEverythingElseIsServed() async throws {
        let server = try SpoutTestServer { $0.shutdown.delaySeconds = 600 }
        let idle = try server.connect()  // a keep-alive connection opened before the signal
        try idle.sendGet("/health")
        let beforeSignal = try idle.readResponse()
        #expect(beforeSignal.status == 200)
        #expect(beforeSignal.header("Connection") == nil, "keep-alive before the signal")
        let active = try server.connect()  // one that sends its next request at once
        try active.sendGet("/health")
        #expect(try active.readResponse().status == 200)
        let stream = try StreamClient(port: server.port, path: "/sequences/naturals?interval=20")

        let stopping = Task { await server.service.shutdown(delay: .seconds(600)) }
        #expect(eventually { server.service.readiness.current == .draining })

        let ready = try server.get("/ready")
        #expect(ready.status == 503)
        #expect(ready.text == #"{"ready":false,"reason":"draining"}"#)
        // New connections are accepted and answered, old ones too, and streams go on.
        #expect(server.isHealthy())
        #expect(try server.get("/sequences/fibonacci?count=5", headers: ["Accept: application/json"]).status == 200)
        // A keep-alive connection gets its answer, told that it is the last one on this connection.
        try active.sendGet("/sequences")
        let last = try active.readResponse()
        #expect(last.status == 200)
        #expect(last.header("Connection")?.lowercased() == "close")
        #expect(active.waitForClose())
        // So does a connection opened during the delay, on its first request.
        let fresh = try server.connect()
        try fresh.sendGet("/health")
        #expect(try fresh.readResponse().header("Connection")?.lowercased() == "close")
        #expect(fresh.waitForClose())
        // The one that stays idle is closed with an orderly end (EOF, not a reset) soon after the signal.
        #expect(try idle.readUntilClosed(timeout: .seconds(10)).isEmpty)
        let before = stream.bodyBytes.count
        #expect(eventually { (try? stream.pump(timeout: .seconds(5))) == true && stream.bodyBytes.count > before })
        #expect(!Self.isRefused(server.port))

        server.service.endDelay()
        await stopping.value
        #expect(eventually { Self.isRefused(server.port) })
        #expect(server.service.metrics.streamsEnded.value(["shutdown"]) == 1)
    }

    @Test func keepAliveClientsSendingWithoutPauseAcrossTheSignalLoseNoRequest() async throws {
        let server = try SpoutTestServer { $0.shutdown.delaySeconds = 600 }
        let clients = (0..<8).map { _ in BackToBackClient(port: server.port) }
        for client in clients { client.start() }
        #expect(eventually(timeout: .seconds(30)) { clients.allSatisfy { $0.record.value.answered >= 5 } })

        // Taken before the signal: the response that says Connection: close comes after it.
        let answeredAtSignal = clients.map { $0.record.value.answered }
        let stopping = Task { await server.service.shutdown(delay: .seconds(600)) }
        #expect(eventually { server.service.readiness.current == .draining })
        // Every client is told `Connection: close` within the delay; without that, each would go on sending
        // until the listener closes (or 200 requests after the signal have gone by, to end the wait).
        #expect(
            eventually(timeout: .seconds(30)) {
                zip(clients, answeredAtSignal).allSatisfy { client, atSignal in
                    let record = client.record.value
                    return record.finished || record.answered >= atSignal + 200
                }
            }
        )
        server.service.endDelay()
        await stopping.value
        for (index, client) in clients.enumerated() {
            #expect(client.finish(), "client \(index) ends")
            let record = client.record.value
            #expect(record.lost.isEmpty, "client \(index): requests sent and never answered: \(record.lost.prefix(3))")
            #expect(record.toldToClose, "client \(index) heard Connection: close: \(record)")
            #expect(record.answered > answeredAtSignal[index], "client \(index) was served during the delay")
        }
    }

    @Test func theDelayEndsByItself() async throws {
        let server = try SpoutTestServer()
        let clock = ContinuousClock()
        let started = clock.now
        await server.service.shutdown(delay: .milliseconds(300))
        #expect(clock.now - started >= .milliseconds(300))
        #expect(eventually { Self.isRefused(server.port) })
    }

    @Test func aSecondShutdownEndsTheDelayAndBothReturn() async throws {
        let server = try SpoutTestServer()
        let first = Task { await server.service.shutdown(delay: .seconds(600)) }
        #expect(eventually { server.service.readiness.current == .draining })
        #expect(server.isHealthy())
        await server.service.shutdown()
        await first.value
        #expect(eventually { Self.isRefused(server.port) })
    }

    @Test func withoutADelayTheListenerClosesAtOnce() async throws {
        let server = try SpoutTestServer()
        await server.service.shutdown()
        #expect(eventually { Self.isRefused(server.port) })
        #expect(server.service.readiness.current == .draining)
    }
}

/// A client that sends `GET /health` back to back on one keep-alive connection, on its own thread, until the
/// server says `Connection: close` or closes the connection. Before each request it looks whether the server
/// has closed already (then the request is never sent, which a client may safely retry elsewhere); a request it
/// sent that gets no complete response is lost.
final class BackToBackClient: Sendable {
    struct Record: Sendable, CustomStringConvertible {
        var answered = 0
        /// The last response said `Connection: close`.
        var toldToClose = false
        /// The server closed the connection between two requests, seen before the next one was written.
        var closedBeforeWrite = false
        /// Requests written that got no complete response, with what happened.
        var lost: [String] = []
        var finished = false

        var description: String {
            "answered \(answered), told to close \(toldToClose), closed before write \(closedBeforeWrite), lost \(lost)"
        }
    }

    let record = TestBox(Record())
    private let port: Int
    private let stop = TestBox(false)
    private let done = TestSignal()
    static let maxRequests = 100_000

    init(port: Int) {
        self.port = port
    }

    func start() {
        Thread { [self] in
            run()
            record.update { $0.finished = true }
            done.signal()
        }.start()
    }

    /// Stops the client if it still runs and waits for its thread.
    func finish() -> Bool {
        stop.update { $0 = true }
        return done.wait(timeout: .seconds(30))
    }

    private func run() {
        guard let client = try? LoopbackClient(port: port) else {
            record.update { $0.lost.append("could not connect") }
            return
        }
        defer { client.close() }
        for _ in 0..<Self.maxRequests where !stop.value {
            if Self.peerHasClosed(client.fd) {
                record.update { $0.closedBeforeWrite = true }
                return
            }
            do {
                try client.sendGet("/health")
            } catch {
                record.update { $0.lost.append("send: \(error)") }
                return
            }
            do {
                let response = try client.readResponse(timeout: .seconds(10))
                let closes = response.header("Connection")?.lowercased() == "close"
                let complete = response.status == 200 && response.text.contains("ok")
                let text = response.description
                record.update { record in
                    if complete { record.answered += 1 } else { record.lost.append(text) }
                    record.toldToClose = closes
                }
                if closes || !complete { return }
            } catch {
                record.update { $0.lost.append("read: \(error)") }
                return
            }
        }
    }

    /// Whether the peer's end (EOF) or a reset is already waiting on `fd`, without consuming anything.
    static func peerHasClosed(_ fd: Int32) -> Bool {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, 0) == 1 else { return false }
        var byte: UInt8 = 0
        let peeked = recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        return peeked == 0 || (peeked < 0 && errno != EAGAIN && errno != EINTR)
    }
}

/// A rolling restart of two instances under steady JSON traffic, through a client that balances like a
/// load balancer (round robin over the instances whose `/ready` said 200, re-checked when its endpoints
/// change) and retries only a refused connection: not one request may fail.
@Suite(.offPool) struct RollingRestartTests {
    /// The client's state, shared with the test.
    struct State: Sendable {
        var known: [Int] = []  // ports the "endpoints" list holds
        var rotation: [Int] = []  // ports that answered /ready with 200 at the last check
        var checkRequested = false
        var checks = 0
        var sent = 0
        var succeeded = 0
        var refusedRetries = 0
        var failures: [String] = []
        var servedWhileDraining: [Int: Int] = [:]
        var drainingBodies: Set<String> = []
        var stop = false
    }

    /// Balances steady `GET /sequences/fibonacci?count=10` (JSON) requests over keep-alive connections.
    final class BalancingClient: Sendable {
        let state = TestBox(State())
        private let servers: TestBox<[Int: SpoutTestServer]>
        private let done = TestSignal()
        static let maxRequests = 20_000
        static let maxSeconds = 120.0

        init(servers: TestBox<[Int: SpoutTestServer]>) {
            self.servers = servers
        }

        func start() {
            let thread = Thread { [self] in
                run()
                done.signal()
            }
            thread.start()
        }

        /// Stops the client and waits for its thread.
        func finish() -> Bool {
            state.update { $0.stop = true }
            return done.wait(timeout: .seconds(30))
        }

        /// Asks for a readiness check of every known endpoint and returns once it ran.
        func check() -> Bool {
            let target = state.update { state -> Int in
                state.checkRequested = true
                return state.checks + 1
            }
            return eventually(timeout: .seconds(30)) { state.value.checks >= target }
        }

        private func run() {
            var pool: [Int: LoopbackClient] = [:]
            var next = 0
            let deadline = Date().addingTimeInterval(Self.maxSeconds)
            // The first look at the endpoints, before any traffic.
            let initial = healthCheck(state.value.known)
            state.update { state in
                state.rotation = initial
                state.checks += 1
            }
            while Date() < deadline {
                let snapshot = state.value
                if snapshot.stop || snapshot.sent >= Self.maxRequests { break }
                if snapshot.checkRequested {
                    let rotation = healthCheck(snapshot.known)
                    for port in pool.keys where !rotation.contains(port) { pool.removeValue(forKey: port) }
                    state.update { state in
                        state.rotation = rotation
                        state.checkRequested = false
                        state.checks += 1
                    }
                    continue
                }
                guard !snapshot.rotation.isEmpty else {
                    state.update { $0.failures.append("no instance in rotation") }
                    break
                }
                next += 1
                var outcome = "not sent"
                // A refused connection moves on to the next instance; nothing else is retried.
                for attempt in 0..<snapshot.rotation.count {
                    let port = snapshot.rotation[(next + attempt) % snapshot.rotation.count]
                    let draining = servers.value[port]?.service.readiness.current == .draining
                    outcome = send(port: port, pool: &pool)
                    if outcome == "refused" {
                        state.update { $0.refusedRetries += 1 }
                        continue
                    }
                    if outcome == "ok" && draining { state.update { $0.servedWhileDraining[port, default: 0] += 1 } }
                    break
                }
                let result = outcome
                state.update { state in
                    state.sent += 1
                    if result == "ok" { state.succeeded += 1 } else { state.failures.append(result) }
                }
            }
        }

        private func send(port: Int, pool: inout [Int: LoopbackClient]) -> String {
            let client: LoopbackClient
            if let pooled = pool[port] {
                client = pooled
            } else {
                do {
                    client = try LoopbackClient(port: port)
                } catch .system(call: "connect", errno: ECONNREFUSED) {
                    return "refused"
                } catch {
                    return "connect to \(port): \(error)"
                }
                pool[port] = client
            }
            do {
                try client.sendGet("/sequences/fibonacci?count=10", headers: ["Accept: application/json"])
                let response = try client.readResponse(timeout: .seconds(10))
                if response.header("Connection")?.lowercased() == "close" { pool.removeValue(forKey: port) }
                return response.status == 200
                    && response.text.contains(#""values":["0","1","1","2","3","5","8","13","21","34"]"#)
                    ? "ok" : "status \(response.status) from \(port)"
            } catch {
                pool.removeValue(forKey: port)
                return "request to \(port): \(error)"
            }
        }

        /// `/ready` of every endpoint on a fresh connection: 200 keeps it, anything else (503, refused) drops it.
        private func healthCheck(_ ports: [Int]) -> [Int] {
            ports.filter { port in
                guard let client = try? LoopbackClient(port: port) else { return false }
                defer { client.close() }
                guard (try? client.sendGet("/ready")) != nil,
                    let response = try? client.readResponse(timeout: .seconds(10))
                else { return false }
                let body = response.text
                if response.status == 503 { state.update { _ = $0.drainingBodies.insert(body) } }
                return response.status == 200
            }
        }
    }

    private static func startInstance() throws -> SpoutTestServer {
        try SpoutTestServer { $0.shutdown.delaySeconds = 600 }
    }

    @Test func aRollingRestartUnderSteadyTrafficLosesNoRequest() async throws {
        let servers = TestBox<[Int: SpoutTestServer]>([:])
        let first = try [Self.startInstance(), Self.startInstance()]
        servers.update { table in for server in first { table[server.port] = server } }
        let client = BalancingClient(servers: servers)
        client.state.update { $0.known = first.map(\.port) }
        client.start()
        #expect(client.check())
        #expect(client.state.value.rotation.count == 2)
        #expect(eventually { client.state.value.succeeded >= 100 })

        var replacements: [SpoutTestServer] = []
        for old in first {
            // A new instance joins the endpoints and, once ready, the rotation.
            let new = try Self.startInstance()
            replacements.append(new)
            servers.update { $0[new.port] = new }
            client.state.update { $0.known.append(new.port) }
            #expect(client.check())
            #expect(client.state.value.rotation.contains(new.port))

            // SIGTERM: the old one drains. The balancer goes on sending to it until it notices, and each of
            // those requests is answered.
            let stopping = Task { await old.service.shutdown(delay: .seconds(600)) }
            #expect(eventually { old.service.readiness.current == .draining })
            #expect(
                eventually(timeout: .seconds(60)) { client.state.value.servedWhileDraining[old.port, default: 0] >= 20 }
            )
            // The balancer's next look, within the delay, sees 503 and takes it out; then the endpoint goes.
            #expect(client.check())
            #expect(!client.state.value.rotation.contains(old.port))
            client.state.update { $0.known.removeAll { $0 == old.port } }
            let sentBefore = client.state.value.sent
            #expect(eventually { client.state.value.sent >= sentBefore + 50 })
            // The delay ends (here by a second signal, as it would by its time) and the listener closes.
            old.service.endDelay()
            await stopping.value
            #expect(eventually { ShutdownDrainTests.isRefused(old.port) })
            #expect(eventually { client.state.value.sent >= sentBefore + 100 })
        }
        #expect(client.finish())
        let final = client.state.value
        #expect(final.failures.isEmpty, "\(final.failures.prefix(5))")
        #expect(final.succeeded == final.sent)
        #expect(final.sent >= 400)
        #expect(final.drainingBodies == [#"{"ready":false,"reason":"draining"}"#])
        for old in first { #expect(final.servedWhileDraining[old.port, default: 0] >= 20) }
        for server in replacements {
            #expect(server.isHealthy())
            await server.stop()
        }
    }
}
