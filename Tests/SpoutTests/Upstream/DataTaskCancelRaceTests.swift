import Foundation
import Reactive
import ReactiveNetworking
import Synchronization
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Cancelling a `dataTaskPublisher` subscription while its task starts or completes: real loopback
/// sockets, real URLSession. On Linux a cancel racing a task's start traps inside FoundationNetworking
/// when the session has a `URLCache` (see `URLSessionTask.cancelUnlessCached(in:)`), so tasks are only
/// cancelled on cache-less sessions like the upstream client's. These tests race the cancel against
/// the end of a chunked and of a Content-Length body many times (the process must survive, the
/// subscriber must never see the cancellation, and every upstream request must end), and check
/// which sessions get their tasks cancelled.
@Suite(.offPool) struct DataTaskCancelRaceTests {
    typealias Output = URLSession.DataTaskPublisher.Output

    /// Iterations of the racing loops: bounded in count, and each wait has a deadline.
    static let rounds = 150

    /// Cancels as a chunked body (no length known to the client) is being completed, many times, at
    /// spread-out moments: before the rest of the body is let go, just after, and later.
    @Test func cancelRacingTheEndOfAChunkedBodyNeverTrapsNorReportsTheCancel() async throws {
        let session = DataTaskPublisherTests.cachelessSession()
        try await Self.raceCancelsAgainstTheEndOfAChunkedBody { url, subscriber in
            session.dataTaskPublisher(for: url).subscribe(subscriber)
        }
    }

    /// Subscribes one `TrackingSubscriber` per round, with `subscribe`, to `/race/N` of a fixture that
    /// sends half a chunked body and the rest when the round's gate opens, and cancels at spread-out
    /// moments around the end of the body. Whatever raced the cancel, the subscriber gets at most one
    /// value, with its completion, and never the cancellation as a failure; every upstream request
    /// ends; and not every cancel came after the completion (the loop did race).
    static func raceCancelsAgainstTheEndOfAChunkedBody<Output, Failure: Error>(
        _ subscribe: (URL, TrackingSubscriber<Output, Failure>) -> Void
    ) async throws {
        let gates = (0..<rounds).map { _ in UpstreamFixture.Gate() }
        let fixture = try UpstreamFixture { request in
            let index = Int(request.path.split(separator: "/").last ?? "") ?? 0
            return .chunked(first: #"{"part":1,"#, rest: [#""more":"#, "true}"], gate: gates[index % gates.count])
        }
        defer { fixture.stop() }
        var completedBeforeCancel = 0
        for index in 0..<rounds {
            let subscriber = TrackingSubscriber<Output, Failure>()
            subscribe(fixture.baseURL.appendingPathComponent("race/\(index)"), subscriber)
            if index % 4 == 0 {
                // Cancel while the request may still be on its way (the task starting).
                spin(index &* 7919 % 4000)
            } else {
                guard await arrived("/race/\(index)", at: fixture) else { break }
                if index % 4 != 1 { gates[index].open() }  // one in four: cancel mid-body, then let go
                spin(index &* 7919 % 4000)  // a spread of moments around the completion, not a wait
            }
            subscriber.cancel()
            gates[index].open()
            if subscriber.completion != nil { completedBeforeCancel += 1 }
            let history = subscriber.history
            #expect(history.count == 1 || history.count == 3, "\(history)")
            if case .failure(let error) = subscriber.completion { Issue.record("failure after cancel: \(error)") }
        }
        // Every upstream request that arrived ended: completed in full, or cut off by the cancel.
        #expect(await fixture.waitUntil(timeout: .seconds(30)) { $0.inFlight == 0 })
        #expect(completedBeforeCancel < rounds, "the loop did race: not every cancel came after the completion")
    }

    /// Content-Length bodies, whose end the client knows, race the same way.
    @Test func cancelRacingTheEndOfAContentLengthBodyNeverReportsTheCancel() async throws {
        let gates = (0..<Self.rounds).map { _ in UpstreamFixture.Gate() }
        let fixture = try UpstreamFixture { request in
            let index = Int(request.path.split(separator: "/").last ?? "") ?? 0
            return .awaiting(gates[index % gates.count], .json(#"{"ok":true}"#))
        }
        defer { fixture.stop() }
        let session = DataTaskPublisherTests.cachelessSession()
        for index in 0..<Self.rounds {
            let subscriber = TrackingSubscriber<Output, URLError>()
            session.dataTaskPublisher(for: fixture.baseURL.appendingPathComponent("cl/\(index)")).subscribe(subscriber)
            guard await Self.arrived("/cl/\(index)", at: fixture) else { break }
            gates[index].open()
            Self.spin(index &* 7919 % 4000)
            subscriber.cancel()
            let history = subscriber.history
            // Nothing but the subscription (the cancel came first), the value and the completion (the body
            // ended first), or the value alone: a cancel that lands between the two delivery steps ends the
            // stream there, as a cancel after a value may. Never a failure.
            #expect((1...3).contains(history.count), "\(history)")
            if case .failure(let error) = subscriber.completion { Issue.record("failure after cancel: \(error)") }
        }
        #expect(await fixture.waitUntil(timeout: .seconds(30)) { $0.inFlight == 0 && $0.total >= Self.rounds })
    }

    /// A chunked body that stops mid-way is cut off by cancel: the fixture sees the client go, and the
    /// subscriber gets nothing after the subscription.
    @Test func cancelCutsOffAChunkedBodyThatStallsMidway() async throws {
        let never = UpstreamFixture.Gate()
        let fixture = try UpstreamFixture { _ in .chunked(first: #"{"partial":"#, rest: ["1}"], gate: never) }
        defer { fixture.stop() }
        let subscriber = TrackingSubscriber<Output, URLError>()
        let url = fixture.baseURL.appendingPathComponent("stall")
        DataTaskPublisherTests.cachelessSession().dataTaskPublisher(for: url).subscribe(subscriber)
        #expect(await fixture.waitUntil { $0.inFlight == 1 })
        subscriber.cancel()
        #expect(await fixture.waitUntil { $0.inFlight == 0 })
        #expect(subscriber.history.count == 1)  // the subscription only
    }

    /// A chunked body that does complete is delivered whole (the fixture's chunked mode end to end).
    @Test func aCompleteChunkedBodyIsDeliveredWhole() async throws {
        let fixture = try UpstreamFixture { _ in .chunked(first: #"{"a":"#, rest: ["1,", #""b":2}"#], gate: nil) }
        defer { fixture.stop() }
        let subscriber = TrackingSubscriber<Output, URLError>()
        URLSession.shared.dataTaskPublisher(for: fixture.baseURL.appendingPathComponent("whole")).subscribe(subscriber)
        #expect(await waitUntil { subscriber.completion != nil })
        let value = try #require(subscriber.values.first)
        #expect(String(decoding: value.data, as: UTF8.self) == #"{"a":1,"b":2}"#)
        #expect(await fixture.waitUntil { $0.inFlight == 0 })
    }

    /// A task of a session without a URLCache is cancelled: its handler reports `cancelled`.
    @Test func aTaskOfACachelessSessionIsCancelled() async throws {
        let fixture = try UpstreamFixture { _ in .hang }
        defer { fixture.stop() }
        let session = DataTaskPublisherTests.cachelessSession()
        let outcome = TaskOutcome()
        let task = session.dataTask(with: fixture.baseURL.appendingPathComponent("c")) { data, _, error in
            outcome.record(data: data, error: error)
        }
        task.resume()
        #expect(await fixture.waitUntil { $0.inFlight == 1 })
        #expect(task.cancelUnlessCached(in: session))
        #expect(await waitUntil { outcome.value != nil })
        #expect(outcome.value == .cancelled)
        #expect(await fixture.waitUntil { $0.inFlight == 0 })
    }

    #if canImport(FoundationNetworking)
        /// On Linux a task of a session with a URLCache is not cancelled (that could trap): it runs to its
        /// end, and the publisher drops what it delivers.
        @Test func aTaskOfASessionWithAURLCacheIsLeftToFinish() async throws {
            let gate = UpstreamFixture.Gate()
            let fixture = try UpstreamFixture { _ in .awaiting(gate, .json(#"{"late":true}"#)) }
            defer { fixture.stop() }
            let session = URLSession(configuration: .ephemeral)
            #expect(session.configuration.urlCache != nil)
            let outcome = TaskOutcome()
            let task = session.dataTask(with: fixture.baseURL.appendingPathComponent("cached")) { data, _, error in
                outcome.record(data: data, error: error)
            }
            task.resume()
            #expect(await fixture.waitUntil { $0.inFlight == 1 })
            #expect(!task.cancelUnlessCached(in: session))
            gate.open()
            #expect(await waitUntil { outcome.value != nil })
            #expect(outcome.value == .data(#"{"late":true}"#))

            // Through the publisher: the subscriber sees nothing after cancel, the upstream answers in full.
            let subscriber = TrackingSubscriber<Output, URLError>()
            let held = UpstreamFixture.Gate()
            let second = try UpstreamFixture { _ in .awaiting(held, .json("{}")) }
            defer { second.stop() }
            session.dataTaskPublisher(for: second.baseURL.appendingPathComponent("p")).subscribe(subscriber)
            #expect(await second.waitUntil { $0.inFlight == 1 })
            subscriber.cancel()
            held.open()
            #expect(await second.waitUntil { $0.inFlight == 0 })
            #expect(subscriber.history.count == 1)
        }
    #endif

    /// Waits (bounded) until the fixture has received a request for `path`; records what it saw if not.
    static func arrived(_ path: String, at fixture: UpstreamFixture) async -> Bool {
        if await fixture.waitUntil(timeout: .seconds(10), { $0.requests(to: path) >= 1 }) { return true }
        let snapshot = fixture.snapshot
        Issue.record(
            "no request for \(path): total \(snapshot.total), in flight \(snapshot.inFlight), last \(snapshot.log.suffix(3))"
        )
        return false
    }

    /// Busy-spins `iterations` rounds: moves the cancel by a few microseconds, without sleeping.
    static func spin(_ iterations: Int) {
        var accumulator = 0
        for step in 0..<iterations { accumulator &+= step &* 31 }
        withExtendedLifetime(accumulator) {}
    }
}

/// What a data task's completion handler got.
private final class TaskOutcome: Sendable {
    enum Value: Equatable {
        case data(String)
        case cancelled
        case other(String)
    }

    private let state = LockedState<Value?>(nil)

    var value: Value? { state.withLock { $0 } }

    func record(data: Data?, error: (any Error)?) {
        let value: Value
        if (error as? URLError)?.code == .cancelled {
            value = .cancelled
        } else if let error {
            value = .other("\(error)")
        } else {
            value = .data(String(decoding: data ?? Data(), as: UTF8.self))
        }
        state.withLock { $0 = value }
    }
}
