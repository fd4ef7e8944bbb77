import Dispatch
import EventLoops
import Foundation
import HTTPServer
import Reactive
import Synchronization
import TestSupport
import Testing

@testable import Spout

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// ``BodyTransfer`` over real loopback sockets and the system's libcurl: the body limit, checked on the
/// `Content-Length` and while the body arrives, connections closed whatever ends a transfer, and a
/// transfer requested and cancelled on an event loop without holding it up.
@Suite(.offPool) struct BodyTransferTests {
    typealias Output = BodyTransfer.Output
    static let limit = 256 * 1024

    static func transfer(_ url: URL, session: UpstreamSession, limit: Int = limit, headers: [String: String] = [:])
        -> BodyTransfer
    {
        BodyTransfer(url: url, headers: headers, timeoutInterval: 30, maxBodyBytes: limit, session: session)
    }

    static func session() -> UpstreamSession {
        UpstreamSession()
    }

    @Test func deliversTheBodyAndTheResponse() async throws {
        let fixture = try UpstreamFixture { _ in .json(#"{"ok":true}"#, status: 201) }
        defer { fixture.stop() }
        let subscriber = TrackingSubscriber<Output, BodyTransferError>()
        Self.transfer(fixture.baseURL.appendingPathComponent("x"), session: Self.session()).subscribe(subscriber)
        #expect(await waitUntil { subscriber.completion != nil })
        let value = try #require(subscriber.values.first)
        #expect(String(decoding: value.data, as: UTF8.self) == #"{"ok":true}"#)
        #expect(value.response.statusCode == 201)
        #expect(subscriber.history.count == 3)
    }

    @Test func aBodyOfExactlyTheLimitIsDelivered() async throws {
        let fixture = try UpstreamFixture { request in
            request.path == "/length"
                ? .large(bytes: Self.limit)
                : .chunked(first: "", rest: [String(repeating: "a", count: Self.limit)], gate: nil)
        }
        defer { fixture.stop() }
        let session = Self.session()
        for path in ["length", "chunked"] {
            let subscriber = TrackingSubscriber<Output, BodyTransferError>()
            Self.transfer(fixture.baseURL.appendingPathComponent(path), session: session).subscribe(subscriber)
            #expect(await waitUntil { subscriber.completion != nil })
            #expect(
                subscriber.values.first?.data.count == Self.limit,
                "\(path): \(subscriber.history.last.map(String.init(describing:)) ?? "")"
            )
        }
    }

    @Test func aContentLengthOverTheLimitFailsWhenTheHeadArrives() async throws {
        let fixture = try UpstreamFixture { _ in .large(bytes: 10 << 20) }
        defer { fixture.stop() }
        let subscriber = TrackingSubscriber<Output, BodyTransferError>()
        Self.transfer(fixture.baseURL.appendingPathComponent("huge"), session: Self.session()).subscribe(subscriber)
        #expect(await waitUntil { subscriber.completion != nil })
        guard case .failure(let error)? = subscriber.completion else {
            Issue.record("expected a failure, got \(subscriber.history)")
            return
        }
        #expect(error == .tooLarge(limit: Self.limit, declared: 10 << 20))
        #expect(await fixture.waitUntil { $0.inFlight == 0 }, "the task was cancelled: the upstream saw the client go")
    }

    @Test func anEndlessBodyIsCutOffAtTheLimit() async throws {
        let fixture = try UpstreamFixture { _ in .endless(limit: 1 << 30) }
        defer { fixture.stop() }
        let subscriber = TrackingSubscriber<Output, BodyTransferError>()
        let session = Self.session()
        Self.transfer(fixture.baseURL.appendingPathComponent("endless"), session: session).subscribe(subscriber)
        #expect(await waitUntil { subscriber.completion != nil })
        guard case .failure(let error)? = subscriber.completion else {
            Issue.record("expected a failure, got \(subscriber.history)")
            return
        }
        #expect(error == .tooLarge(limit: Self.limit, declared: nil))
        // The transfer ended at the byte that crossed the limit: libcurl was refused it and closed the
        // connection, so the upstream could hand the kernel little more than the limit and the socket buffers.
        #expect(await fixture.waitUntil { $0.inFlight == 0 }, "the upstream saw the client go")
        #expect(fixture.snapshot.bodyBytesSent < 32 << 20, "\(fixture.snapshot.bodyBytesSent) bytes went out")
        #expect(await waitUntil { session.runningTransfers == 0 }, "the session forgot the transfer")
    }

    @Test func cancellingBeforeDemandSendsNothingAndCancellingLaterCutsTheConnection() async throws {
        let fixture = try UpstreamFixture { _ in .hang }
        defer { fixture.stop() }
        let session = Self.session()
        let idle = TrackingSubscriber<Output, BodyTransferError>(initialDemand: nil)
        Self.transfer(fixture.baseURL.appendingPathComponent("never"), session: session).subscribe(idle)
        idle.cancel()
        let hanging = TrackingSubscriber<Output, BodyTransferError>()
        Self.transfer(fixture.baseURL.appendingPathComponent("hang"), session: session).subscribe(hanging)
        #expect(await fixture.waitUntil { $0.inFlight == 1 })
        hanging.cancel()
        #expect(await fixture.waitUntil { $0.inFlight == 0 })
        #expect(fixture.snapshot.log == ["/hang"])
        #expect(idle.history.count == 1 && hanging.history.count == 1, "nothing after the subscription")
        #expect(await waitUntil { session.runningTransfers == 0 })
    }

    /// Cancels as a chunked body is being completed, many times, at spread-out moments (see
    /// `DataTaskCancelRaceTests.raceCancelsAgainstTheEndOfAChunkedBody`); no transfer stays registered.
    @Test func cancelRacingTheEndOfABodyNeverReportsTheCancel() async throws {
        let session = Self.session()
        try await DataTaskCancelRaceTests.raceCancelsAgainstTheEndOfAChunkedBody { url, subscriber in
            Self.transfer(url, session: session).subscribe(subscriber)
        }
        #expect(await waitUntil { session.runningTransfers == 0 }, "no transfer left registered")
    }

    @Test func extraHeadersReachTheUpstream() async throws {
        let fixture = try UpstreamFixture { _ in .json("{}") }
        defer { fixture.stop() }
        let subscriber = TrackingSubscriber<Output, BodyTransferError>()
        let headers = [
            "X-Request-ID": "req-42", "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        ]
        Self.transfer(fixture.baseURL.appendingPathComponent("h"), session: Self.session(), headers: headers)
            .subscribe(subscriber)
        #expect(await waitUntil { subscriber.completion != nil })
        let received = try #require(fixture.snapshot.headers.first)
        let names = received.map { $0.name.lowercased() }
        #expect(received.first { $0.name.lowercased() == "x-request-id" }?.value == "req-42")
        #expect(received.first { $0.name.lowercased() == "traceparent" }?.value == headers["traceparent"])
        #expect(names.contains("accept") && names.contains("user-agent"), "the session's own fields stay: \(names)")
    }

    /// A transfer requested and cancelled on an event loop — as a route does when it subscribes, and as
    /// the loop does when the client leaves — only hands the driver's thread a command: the loop is never
    /// held up, the body's bytes arrive on the driver's thread and the subscriber hears on neither. Once the
    /// session is invalidated, a transfer fails as cancelled and makes no request.
    @Test func requestedAndCancelledOnAnEventLoopNothingRunsOnTheLoop() async throws {
        let fixture = try UpstreamFixture { request in request.path == "/hang" ? .hang : .json("{}") }
        defer { fixture.stop() }
        let loop = EventLoop(label: "test.loop")
        let session = Self.session()
        let finished = TrackingSubscriber<Output, BodyTransferError>()
        let hanging = TrackingSubscriber<Output, BodyTransferError>()
        let ok = Self.transfer(fixture.baseURL.appendingPathComponent("ok"), session: session)
        let hang = Self.transfer(fixture.baseURL.appendingPathComponent("hang"), session: session)
        let deliveredOnLoop = LockedState(false)
        // Only the loop's closure uses it, once.
        nonisolated(unsafe) let recording = ok.handleEvents(receiveOutput: { _ in
            if loop.inEventLoop { deliveredOnLoop.withLock { $0 = true } }
        })
        loop.execute {
            recording.subscribe(finished)
            hang.subscribe(hanging)
        }
        #expect(await waitUntil { finished.completion != nil })
        #expect(finished.values.count == 1)
        #expect(!deliveredOnLoop.withLock { $0 }, "the subscriber was called on the loop")
        #expect(await fixture.waitUntil { $0.inFlight == 1 })
        loop.execute { hanging.cancel() }
        #expect(await fixture.waitUntil { $0.inFlight == 0 }, "the cancel closed the connection")
        #expect(await waitUntil { session.runningTransfers == 0 })
        #expect(hanging.history.count == 1, "nothing after the cancel: \(hanging.history)")

        session.invalidate()
        let late = TrackingSubscriber<Output, BodyTransferError>()
        Self.transfer(fixture.baseURL.appendingPathComponent("late"), session: session).subscribe(late)
        #expect(await waitUntil { late.completion != nil })
        if case .failure(.transport(let error))? = late.completion {
            #expect(error.code == .cancelled)
        } else {
            Issue.record("expected a cancelled transfer, got \(late.history)")
        }
        #expect(fixture.snapshot.requests(toPath: "/late") == 0)
    }

    /// Invalidating the session ends a transfer under way: its subscriber hears of a cancellation and the
    /// connection is closed.
    @Test func invalidatingEndsATransferUnderWay() async throws {
        let fixture = try UpstreamFixture { _ in .hang }
        defer { fixture.stop() }
        let session = Self.session()
        let subscriber = TrackingSubscriber<Output, BodyTransferError>()
        Self.transfer(fixture.baseURL.appendingPathComponent("hang"), session: session).subscribe(subscriber)
        #expect(await fixture.waitUntil { $0.inFlight == 1 })
        session.invalidate()
        #expect(await waitUntil { subscriber.completion != nil })
        if case .failure(.transport(let error))? = subscriber.completion {
            #expect(error.code == .cancelled)
        } else {
            Issue.record("expected a cancelled transfer, got \(subscriber.history)")
        }
        #expect(await fixture.waitUntil { $0.inFlight == 0 })
    }

    /// The transfer's socket is close-on-exec from its creation: a process spawned meanwhile by anything else
    /// in the service's process does not inherit it (a child that did kept the connection open after the
    /// transfer had closed it: an exit test's child held 8 of 16 upstream connections of a crowd test).
    @Test func theConnectionIsNotInheritedByChildProcesses() async throws {
        let fixture = try UpstreamFixture { _ in .hang }
        defer { fixture.stop() }
        let port = try #require(fixture.baseURL.port)
        let subscriber = TrackingSubscriber<Output, BodyTransferError>()
        Self.transfer(fixture.baseURL.appendingPathComponent("hang"), session: Self.session()).subscribe(subscriber)
        #expect(await fixture.waitUntil { $0.inFlight == 1 })
        let sockets = Self.descriptorsConnected(toPort: port)
        #expect(sockets.count == 1, "descriptors connected to the upstream: \(sockets)")
        for fd in sockets {
            #expect(fcntl(fd, F_GETFD) & FD_CLOEXEC != 0, "descriptor \(fd) is inherited by child processes")
        }
        subscriber.cancel()
        #expect(await fixture.waitUntil { $0.inFlight == 0 })
    }

    /// This process's sockets whose peer is `127.0.0.1:port`.
    static func descriptorsConnected(toPort port: Int) -> [Int32] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return names.compactMap(Int32.init).filter { fd in
            var address = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let found = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) == 0 }
            }
            return found && address.sin_family == sa_family_t(AF_INET)
                && Int(UInt16(bigEndian: address.sin_port)) == port
        }
    }
}
