import Dispatch
import Foundation
import Reactive
import TestSupport
import Testing

@Suite(.offPool) struct TimerPublisherTests {
    @Test func firesOnABackgroundRunLoopOnceConnected() {
        let background = BackgroundRunLoop()
        defer { background.stop() }
        let timer = Timer.publish(every: 0.01, on: background.runLoop, in: .default)
        let ticks = TestSignal()
        let subscriber = TrackingSubscriber<Date, Never>(initialDemand: .max(3)) { _, _ in
            ticks.signal()
            return .none
        }
        timer.subscribe(subscriber)
        let connection = timer.connect()
        for _ in 0..<3 { #expect(ticks.wait(timeout: .seconds(10))) }
        connection.cancel()
        #expect(subscriber.values.count == 3)
        #expect(subscriber.completion == nil)
    }

    @Test func nothingIsSentBeforeConnect() {
        let background = BackgroundRunLoop()
        defer { background.stop() }
        let timer = Timer.publish(every: 0.01, tolerance: 0.001, on: background.runLoop, in: .default)
        let ticks = TestSignal()
        let subscriber = TrackingSubscriber<Date, Never> { _, _ in
            ticks.signal()
            return .none
        }
        timer.subscribe(subscriber)
        #expect(timer.interval == 0.01)
        #expect(timer.tolerance == 0.001)
        #expect(subscriber.history.count == 1)
        let connection = timer.connect()
        #expect(ticks.wait(timeout: .seconds(10)))
        connection.cancel()
        subscriber.cancel()
    }

    @Test func subscribersShareTheTimer() {
        let background = BackgroundRunLoop()
        defer { background.stop() }
        let timer = Timer.publish(every: 0.01, on: background.runLoop, in: .default)
        let first = TestSignal()
        let second = TestSignal()
        let a = TrackingSubscriber<Date, Never>(initialDemand: .max(1)) { _, _ in
            first.signal()
            return .none
        }
        let b = TrackingSubscriber<Date, Never>(initialDemand: .max(1)) { _, _ in
            second.signal()
            return .none
        }
        timer.subscribe(a)
        timer.subscribe(b)
        let connection = timer.connect()
        #expect(first.wait(timeout: .seconds(10)))
        #expect(second.wait(timeout: .seconds(10)))
        connection.cancel()
        #expect(a.values == b.values)
    }
}

@Suite(.offPool) struct TopLevelCoderTests {
    private struct Post: Codable, Equatable {
        let id: Int
        let title: String
    }

    private func roundTrip<E: TopLevelEncoder, D: TopLevelDecoder>(
        _ post: Post,
        _ encoder: E,
        _ decoder: D
    ) throws -> Post where E.Output == D.Input {
        try decoder.decode(Post.self, from: encoder.encode(post))
    }

    @Test func jsonAndPropertyListCodersConform() throws {
        let post = Post(id: 1, title: "Hello")
        #expect(try roundTrip(post, JSONEncoder(), JSONDecoder()) == post)
        #expect(try roundTrip(post, PropertyListEncoder(), PropertyListDecoder()) == post)
    }
}
