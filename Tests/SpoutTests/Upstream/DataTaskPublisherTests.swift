import Foundation
import Reactive
import ReactiveNetworking
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `URLSession.dataTaskPublisher` on its own: lazy start, delivery, and cancellation reaching the task.
@Suite(.offPool) struct DataTaskPublisherTests {
    typealias Output = URLSession.DataTaskPublisher.Output

    @Test func deliversTheDataAndTheResponse() async throws {
        let fixture = try UpstreamFixture { _ in .json(#"{"ok":true}"#, status: 201) }
        defer { fixture.stop() }
        let done = TestBox(false)
        let subscriber = TrackingSubscriber<Output, URLError>(onCompletion: { _ in done.update { $0 = true } })
        URLSession.shared.dataTaskPublisher(for: fixture.baseURL.appendingPathComponent("x")).subscribe(subscriber)
        #expect(await waitUntil { done.value })
        let value = try #require(subscriber.values.first)
        #expect(String(decoding: value.data, as: UTF8.self) == #"{"ok":true}"#)
        #expect((value.response as? HTTPURLResponse)?.statusCode == 201)
        #expect(subscriber.completion.map { if case .finished = $0 { true } else { false } } == true)
    }

    @Test func nothingIsSentUntilTheFirstDemand() async throws {
        let fixture = try UpstreamFixture { _ in .json("{}") }
        defer { fixture.stop() }
        let lazy = TrackingSubscriber<Output, URLError>(initialDemand: nil)
        URLSession.shared.dataTaskPublisher(for: fixture.baseURL.appendingPathComponent("lazy")).subscribe(lazy)
        // A whole request to another path completes meanwhile; the lazy one has not been sent.
        let probe = TrackingSubscriber<Output, URLError>()
        URLSession.shared.dataTaskPublisher(for: fixture.baseURL.appendingPathComponent("probe")).subscribe(probe)
        #expect(await waitUntil { probe.completion != nil })
        #expect(fixture.snapshot.requests(to: "/lazy") == 0)
        lazy.request(.max(1))
        #expect(await fixture.waitUntil { $0.requests(to: "/lazy") == 1 })
        #expect(await waitUntil { lazy.completion != nil })
    }

    @Test func cancellingTheSubscriptionCancelsTheTask() async throws {
        let fixture = try UpstreamFixture { _ in .hang }
        defer { fixture.stop() }
        let subscriber = TrackingSubscriber<Output, URLError>()
        // A session without a URLCache: only its tasks are cancelled (see URLSessionTask.cancelUnlessCached).
        Self.cachelessSession().dataTaskPublisher(for: fixture.baseURL.appendingPathComponent("hang"))
            .subscribe(subscriber)
        #expect(await fixture.waitUntil { $0.inFlight == 1 })
        subscriber.cancel()
        // The fixture sees the client go: the task's connection was closed.
        #expect(await fixture.waitUntil { $0.inFlight == 0 })
        #expect(subscriber.history.count == 1)  // the subscription only: no completion after cancel
    }

    /// A session like Spout's upstream client's: no URLCache.
    static func cachelessSession() -> URLSession {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        return URLSession(configuration: configuration)
    }

    @Test func cancelBeforeDemandSendsNothing() async throws {
        let fixture = try UpstreamFixture { _ in .json("{}") }
        defer { fixture.stop() }
        let subscriber = TrackingSubscriber<Output, URLError>(initialDemand: nil)
        URLSession.shared.dataTaskPublisher(for: fixture.baseURL.appendingPathComponent("never")).subscribe(subscriber)
        let subscription = try #require(subscriber.subscription)
        subscriber.cancel()
        subscription.request(.max(1))  // after cancel: must not start a task
        let probe = TrackingSubscriber<Output, URLError>()
        URLSession.shared.dataTaskPublisher(for: fixture.baseURL.appendingPathComponent("probe")).subscribe(probe)
        #expect(await waitUntil { probe.completion != nil })
        #expect(fixture.snapshot.requests(to: "/never") == 0)
        #expect(subscriber.history.count == 1)
    }
}
