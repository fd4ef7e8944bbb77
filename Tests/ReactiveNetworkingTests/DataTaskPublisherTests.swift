import EventLoops
import Foundation
import Glibc
import HTTPServer
import Reactive
import ReactiveNetworking
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `URLSession.DataTaskPublisher` against a real HTTP server on 127.0.0.1, through a real `URLSession`.
@Suite(.offPool) struct DataTaskPublisherTests {
    /// A loopback server: `/data` answers `hello` and counts its requests; `/hold` keeps the request
    /// open until the test releases it.
    final class Upstream: Sendable {
        let server: Server
        let dataRequests = TestBox(0)
        let held = TestBox<[Responder]>([])
        let holdArrived = TestSignal()

        init() throws {
            let dataRequests = self.dataRequests, held = self.held, holdArrived = self.holdArrived
            server = try Server.start(
                configuration: Server.Configuration(host: "127.0.0.1", port: 0),
                group: EventLoopGroup(loopCount: 1)
            ) { request, responder in
                switch request.path {
                case "/data":
                    dataRequests.update { $0 += 1 }
                    responder.respond(headers: ["Content-Type": "text/plain"], body: "hello")
                case "/hold":
                    held.update { $0.append(responder) }
                    holdArrived.signal()
                default:
                    responder.respond(status: .notFound, body: "not found")
                }
            }
        }

        func url(_ path: String) -> URL { URL(string: "http://127.0.0.1:\(server.port)\(path)")! }

        func stop() {
            for responder in held.value {
                responder.loop.execute { responder.respond(status: .serviceUnavailable, body: "bye") }
            }
            let done = TestSignal()
            server.shutdown(deadline: .seconds(2)) { done.signal() }
            _ = done.wait(timeout: .seconds(7))
        }
    }

    /// A session without a URLCache, so that cancelling a task cancels it on Linux too.
    static func session() -> URLSession {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        return URLSession(configuration: configuration)
    }

    @Test func deliversDataAndResponseThenFinishes() throws {
        let upstream = try Upstream()
        defer { upstream.stop() }
        let session = Self.session()
        let done = TestSignal()
        let result = TestBox<(body: String, status: Int, completion: String)?>(nil)
        let cancellable = session.dataTaskPublisher(for: upstream.url("/data")).sink(
            receiveCompletion: { completion in
                result.update { $0?.completion = "\(completion)" }
                done.signal()
            },
            receiveValue: { data, response in
                let status = (response as? HTTPURLResponse)?.statusCode ?? -1
                result.update { $0 = (String(decoding: data, as: UTF8.self), status, "") }
            }
        )
        #expect(done.wait(timeout: .seconds(10)))
        #expect(result.value?.body == "hello")
        #expect(result.value?.status == 200)
        #expect(result.value?.completion == "finished")
        cancellable.cancel()
    }

    @Test func sendsNothingBeforeDemandAndOneRequestOnDemand() throws {
        let upstream = try Upstream()
        defer { upstream.stop() }
        let session = Self.session()
        let received = TestSignal()
        let subscriber = TrackingSubscriber<URLSession.DataTaskPublisher.Output, URLError>(
            initialDemand: nil,
            onCompletion: { _ in received.signal() }
        )
        session.dataTaskPublisher(for: URLRequest(url: upstream.url("/data"))).subscribe(subscriber)
        // A request that went out after the subscription was made, and came back: the server has seen
        // everything sent before it on this machine's loopback by now.
        let probe = TestSignal()
        session.dataTask(with: upstream.url("/missing")) { _, _, _ in probe.signal() }.resume()
        #expect(probe.wait(timeout: .seconds(10)))
        #expect(upstream.dataRequests.value == 0)

        subscriber.request(.max(1))
        #expect(received.wait(timeout: .seconds(10)))
        #expect(upstream.dataRequests.value == 1)
        #expect(subscriber.values.map { String(decoding: $0.data, as: UTF8.self) } == ["hello"])
        #expect(subscriber.completion.map { "\($0)" } == "finished")
    }

    @Test func cancelStopsDeliveryOfAnAnswerThatArrivesLater() throws {
        let upstream = try Upstream()
        defer { upstream.stop() }
        let session = Self.session()
        let subscriber = TrackingSubscriber<URLSession.DataTaskPublisher.Output, URLError>()
        session.dataTaskPublisher(for: upstream.url("/hold")).subscribe(subscriber)
        #expect(upstream.holdArrived.wait(timeout: .seconds(10)))
        subscriber.cancel()
        for responder in upstream.held.value { responder.loop.execute { responder.respond(body: "late") } }
        upstream.held.update { $0 = [] }
        // A later request on the same session completes; the cancelled one delivered nothing meanwhile.
        let probe = TestSignal()
        session.dataTask(with: upstream.url("/data")) { _, _, _ in probe.signal() }.resume()
        #expect(probe.wait(timeout: .seconds(10)))
        #expect(subscriber.values.isEmpty)
        #expect(subscriber.completion == nil)
    }

    /// Creating (and resuming) a task can wait on the session's libcurl queue on Linux, which an event loop
    /// must never do: the publisher creates its tasks on a queue of its own, not on the thread that asks.
    @Test func theTaskIsCreatedAwayFromTheThreadThatRequests() throws {
        let upstream = try Upstream()
        defer { upstream.stop() }
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        let session = ThreadRecordingSession(configuration: configuration)
        let received = TestSignal()
        let subscriber = TrackingSubscriber<URLSession.DataTaskPublisher.Output, URLError>(
            initialDemand: nil,
            onCompletion: { _ in received.signal() }
        )
        session.dataTaskPublisher(for: URLRequest(url: upstream.url("/data"))).subscribe(subscriber)
        let caller = pthread_self()
        subscriber.request(.max(1))
        #expect(received.wait(timeout: .seconds(10)))
        #expect(subscriber.values.map { String(decoding: $0.data, as: UTF8.self) } == ["hello"])
        let creators = session.creators.value
        #expect(creators.count == 1)
        #expect(creators.allSatisfy { pthread_equal($0, caller) == 0 })
    }

    @Test func connectionRefusedFailsWithAURLError() throws {
        // Bind a port, then close the server, so that nothing listens there.
        let upstream = try Upstream()
        let url = upstream.url("/data")
        upstream.stop()
        let done = TestSignal()
        let failure = TestBox<URLError?>(nil)
        let cancellable = Self.session().dataTaskPublisher(for: url).sink(
            receiveCompletion: { completion in
                if case .failure(let error) = completion { failure.update { $0 = error } }
                done.signal()
            },
            receiveValue: { _ in }
        )
        #expect(done.wait(timeout: .seconds(10)))
        // Refused (or, if the port's last connection is still being torn down, lost): a URLError either way.
        let code = failure.value?.code
        #expect(
            code == .cannotConnectToHost || code == .networkConnectionLost,
            "got \(String(describing: failure.value))"
        )
        cancellable.cancel()
    }
}

/// A session that records the thread each data task is created on.
///
/// **Thread safety:** `creators` is a locked box; the rest is `URLSession`'s.
private final class ThreadRecordingSession: URLSession, @unchecked Sendable {
    // @unchecked Sendable: audited, the only added state is `creators`, a `TestBox` (locked).
    let creators = TestBox<[pthread_t]>([])

    override func dataTask(
        with request: URLRequest,
        completionHandler: @escaping @Sendable (Data?, URLResponse?, (any Error)?) -> Void
    ) -> URLSessionDataTask {
        let thread = pthread_self()
        creators.update { $0.append(thread) }
        return super.dataTask(with: request, completionHandler: completionHandler)
    }
}
