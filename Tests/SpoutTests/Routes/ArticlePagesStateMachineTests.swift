import Foundation
import HTTPServer
import Reactive
import TestSupport
import Testing

@testable import Spout

/// The paging state machine on its own: which page is next, when a page is due, and who drains.
@Suite(.offPool) struct ArticlePagesStateMachineTests {
    private static func posts(_ ids: ClosedRange<Int>) -> [Post] {
        ids.map { Post(userId: 1, id: $0, title: "t\($0)", body: "b") }
    }

    private final class Handle: Cancellable {
        func cancel() {}
    }

    /// Runs `next()` until `.idle`, answering fetches with `pages` (by number); returns what was done.
    private func drain(_ machine: inout ArticlePagesStateMachine, pages: [Int: [Post]] = [:]) -> [String] {
        var trace: [String] = []
        for _ in 0..<1_000 {
            switch machine.next() {
            case .idle:
                trace.append("idle")
                return trace
            case .deliver(let article):
                trace.append("\(article.index):\(article.post.id)")
            case .fetch(let page):
                trace.append("fetch \(page)")
                let result1 = machine.fetchStarted(Handle())
                #expect(result1)
                if let posts = pages[page] {
                    let drains = machine.pageArrived(posts)
                    #expect(drains == false)  // the drainer is still draining
                }
            case .finish:
                trace.append("finish")
                return trace
            case .fail(let error):
                trace.append("fail \(error)")
                return trace
            }
        }
        Issue.record("drain did not stop")
        return trace
    }

    @Test func nothingIsFetchedBeforeDemandAndOnlyOnePageForDemandWithinIt() {
        var machine = ArticlePagesStateMachine(pageSize: 3, start: 0, limit: nil)
        #expect(drain(&machine) == ["idle"])
        let result2 = machine.demandRequested(.max(2))
        #expect(result2)
        #expect(drain(&machine, pages: [1: Self.posts(1...3)]) == ["fetch 1", "0:1", "1:2", "idle"])
        let result3 = machine.demandRequested(.max(2))
        #expect(result3)
        // One buffered article, then demand reaches past the buffer: the next page is fetched.
        #expect(drain(&machine) == ["2:3", "fetch 2", "idle"])
        let drainsShortPage = machine.pageArrived(Self.posts(4...5))  // short page: the last
        #expect(drainsShortPage)
        #expect(drain(&machine) == ["3:4", "idle"])
        let result4 = machine.demandRequested(.unlimited)
        #expect(result4)
        #expect(drain(&machine) == ["4:5", "finish"])
        let result5 = machine.demandRequested(.max(1))
        #expect(result5 == false)
    }

    @Test func aResumeStartsInsideItsPageAndALimitStopsWithoutAnotherFetch() {
        var machine = ArticlePagesStateMachine(pageSize: 10, start: 27, limit: 2)
        let result6 = machine.demandRequested(.unlimited)
        #expect(result6)
        #expect(drain(&machine, pages: [3: Self.posts(21...30)]) == ["fetch 3", "27:28", "28:29", "finish"])
    }

    @Test func aFullLastPageEndsWithAnEmptyOne() {
        var machine = ArticlePagesStateMachine(pageSize: 2, start: 0, limit: nil)
        let result7 = machine.demandRequested(.unlimited)
        #expect(result7)
        #expect(
            drain(&machine, pages: [1: Self.posts(1...2), 2: []]) == ["fetch 1", "0:1", "1:2", "fetch 2", "finish"]
        )
    }

    @Test func callsWhileDrainingOnlyUpdateTheStateAndAFailureIsReportedOnce() {
        var machine = ArticlePagesStateMachine(pageSize: 2, start: 0, limit: nil)
        let result8 = machine.demandRequested(.max(1))
        #expect(result8)
        #expect(machine.demandRequested(.max(1)) == false)  // the first caller drains
        #expect(drain(&machine) == ["fetch 1", "idle"])
        let error = UpstreamError.status(UpstreamTarget(url: "u", resource: "u"), code: 500, retryAfter: nil)
        let result9 = machine.pageFailed(error)
        #expect(result9)
        #expect(drain(&machine) == ["fail \(error)"])
        let result10 = machine.pageArrived(Self.posts(1...2))
        #expect(result10 == false)
    }

    @Test func cancelReturnsThePageRequestInFlight() {
        var machine = ArticlePagesStateMachine(pageSize: 2, start: 0, limit: nil)
        let result11 = machine.demandRequested(.max(1))
        #expect(result11)
        guard case .fetch(1) = machine.next() else {
            Issue.record("expected a fetch")
            return
        }
        let handle = Handle()
        let result12 = machine.fetchStarted(handle)
        #expect(result12)
        let result13 = machine.cancelled()
        #expect(result13 as? Handle === handle)
        let result14 = machine.cancelled()
        #expect(result14 == nil)
        let result15 = machine.fetchStarted(Handle())
        #expect(result15 == false)
    }

    @Test func aSubscriberAskingForMoreInsideReceiveGetsEveryArticleInOrder() async throws {
        let fixture = try UpstreamFixture { request in
            let page = Int(request.query("_page") ?? "") ?? 0
            // Pages of 4, 4 and 1: nine articles.
            let posts = page <= 3 ? RouteTest.posts(from: (page - 1) * 4 + 1, count: page < 3 ? 4 : 1) : []
            return .json(RouteTest.json(posts))
        }
        defer { fixture.stop() }
        let client = UpstreamClient(configuration: SpoutConfiguration.Upstream(), baseURL: fixture.baseURL)
        // One at a time, re-entrantly: each value asks for the next from inside receive.
        let subscriber = TrackingSubscriber<IndexedPost, UpstreamError>(
            initialDemand: .max(1),
            onValue: { subscriber, _ in
                subscriber.request(.max(1))
                return .none
            }
        )
        ArticlePages(client: client, pageSize: 4).subscribe(subscriber)
        #expect(eventually { subscriber.completion != nil })
        #expect(subscriber.values.map(\.index) == Array(0..<9))
        #expect(subscriber.values.map(\.post.id) == Array(1...9))
        #expect(fixture.snapshot.total == 3)
    }
}

/// The encoders of JSON event streams.
@Suite(.offPool) struct JSONEventEncoderTests {
    private func encode<E: StreamEncoder>(_ encoder: E, _ events: [E.Element], end: StreamEnd) -> String {
        var buffer = OutboundBuffer()
        encoder.appendPrologue(to: &buffer)
        for event in events { encoder.append(event, to: &buffer) }
        encoder.appendEnd(end, to: &buffer)
        return String(decoding: buffer.readableBytes, as: UTF8.self)
    }

    @Test func sseFramesCannotBeInjectedFromTheData() {
        let data = "{\"a\":1}\n\ndata: injected"
        let hostile = JSONStreamEvent(id: "1\nevent: x", event: "step\r\n", json: Array(data.utf8))
        let text = encode(SSEJSONEncoder(retryMilliseconds: 10), [hostile], end: .completed)
        var parser = EventStreamParser()
        parser.feed(text)
        #expect(parser.events.count == 2)
        #expect(parser.events.first == .init(type: "step", data: data, lastEventID: "1event: x"))
        #expect(parser.events.last?.type == "end")
    }

    @Test func aWorkflowStreamEndsWithItsLastEventUnlessShutDown() {
        let summary = JSONStreamEvent(event: "summary", json: Array("{}".utf8))
        let encoder = SSEJSONEncoder(retryMilliseconds: 10, writesCompletionFrame: false)
        #expect(encode(encoder, [summary], end: .completed) == "retry: 10\nevent: summary\ndata: {}\n\n")
        #expect(encode(encoder, [summary], end: .shutdown).hasSuffix("event: end\ndata: {\"reason\":\"shutdown\"}\n\n"))
    }

    @Test func ndjsonWrapsNamedEventsAndPassesPlainOnes() {
        let events = [
            JSONStreamEvent(id: "0", json: Array(#"{"id":1}"#.utf8)),
            JSONStreamEvent(event: "step", json: Array("{}".utf8)),
        ]
        let expected =
            #"{"id":1}"# + "\n" + #"{"event":"step","data":{}}"# + "\n" + #"{"end":{"reason":"completed"}}"# + "\n"
        #expect(encode(NDJSONEventEncoder(), events, end: .completed) == expected)
    }
}
