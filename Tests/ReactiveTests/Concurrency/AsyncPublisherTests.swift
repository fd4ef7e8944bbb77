import Foundation
import Reactive
import TestSupport
import Testing

/// `values`: Combine's async bridge. Each `next()` asks for `.max(1)`; cancelling the task or
/// releasing the iterator cancels the subscription.
@Suite struct AsyncPublisherTests {
    @Test func asksForOneValuePerNextAndNothingBeforeTheFirst() async {
        let upstream = DrivenPublisher<Int, Never>()
        let task = Task { () -> [Int?] in
            var iterator = upstream.values.makeAsyncIterator()
            var received: [Int?] = []
            for _ in 0..<3 { received.append(await iterator.next()) }
            return received
        }
        // Feed each value only once it was asked for; the demand counts the next() calls.
        for round in 1...2 {
            while upstream.subscribeCount == 0 || upstream.subscription.totalDemand != .max(round) {
                await Task.yield()
            }
            upstream.send(round * 10)
        }
        while upstream.subscription.totalDemand != .max(3) { await Task.yield() }
        upstream.send(completion: .finished)
        #expect(await task.value == [10, 20, nil])
        #expect(upstream.subscription.history == [.requested(.max(1)), .requested(.max(1)), .requested(.max(1))])
    }

    @Test func forAwaitOverASequencePublisher() async {
        var received: [Int] = []
        for await value in [1, 2, 3].publisher.values { received.append(value) }
        #expect(received == [1, 2, 3])
    }

    /// Re-entrant upstream: `Just` delivers its value and its completion inside the `request(.max(1))`
    /// of the first `next()`.
    @Test func reentrantUpstreamDeliversInsideRequest() async throws {
        var iterator = Just(7).values.makeAsyncIterator()
        #expect(await iterator.next() == 7)
        #expect(await iterator.next() == nil)
        #expect(await iterator.next() == nil)

        var throwing = Fail<Int, OperatorError>(error: OperatorError(code: 3)).values.makeAsyncIterator()
        await #expect(throws: OperatorError(code: 3)) { try await throwing.next() }
        #expect(try await throwing.next() == nil)
    }

    @Test func failureIsThrownOnceThenTheIterationIsOver() async throws {
        let subject = PassthroughSubject<Int, OperatorError>()
        var iterator = subject.values.makeAsyncIterator()
        subject.send(completion: .failure(OperatorError(code: 9)))
        await #expect(throws: OperatorError(code: 9)) { try await iterator.next() }
        #expect(try await iterator.next() == nil)
    }

    @Test func cancellingTheAwaitingTaskEndsTheIterationAndCancelsTheSubscription() async {
        let upstream = DrivenPublisher<Int, Never>()
        let task = Task { () -> Int in
            var count = 0
            for await _ in upstream.values { count += 1 }
            return count
        }
        while upstream.subscribeCount == 0 || upstream.subscription.totalDemand != .max(1) { await Task.yield() }
        task.cancel()
        #expect(await task.value == 0)
        #expect(upstream.subscription.isCancelled)
    }

    @Test func aTaskCancelledBeforeNextGetsNilAndTheSubscriptionIsCancelled() async {
        let upstream = DrivenPublisher<Int, Never>()
        let task = Task { () -> Int? in
            withUnsafeCurrentTask { $0?.cancel() }
            var iterator = upstream.values.makeAsyncIterator()
            return await iterator.next()
        }
        #expect(await task.value == nil)
        #expect(upstream.subscription.isCancelled)
    }

    @Test func releasingTheIteratorCancelsTheSubscription() async {
        let upstream = DrivenPublisher<Int, Never>()
        let task = Task { () -> Int? in
            var iterator = upstream.values.makeAsyncIterator()
            return await iterator.next()
        }
        while upstream.subscribeCount == 0 || upstream.subscription.totalDemand != .max(1) { await Task.yield() }
        #expect(!upstream.subscription.isCancelled)
        upstream.send(5)
        // The iterator is released when the task returns; its subscription with it.
        #expect(await task.value == 5)
        #expect(upstream.subscription.isCancelled)
    }

    @Test func leavingAForAwaitLoopCancelsTheSubscription() async {
        let cancelled = TestBox(false)
        let publisher = (1...).publisher.handleEvents(receiveCancel: { cancelled.update { $0 = true } })
        var received: [Int] = []
        for await value in publisher.values {
            received.append(value)
            if value == 3 { break }
        }
        #expect(received == [1, 2, 3])
        #expect(cancelled.value)
    }

    /// The bridge the Combine guides teach, both ways.
    @Test func theGuidesBridgeWorksAsWritten() async throws {
        struct Service {
            func fetchArticles() -> AnyPublisher<[String], any Error> {
                Future { promise in
                    Task { promise(.success(["a", "b"])) }
                }
                .eraseToAnyPublisher()
            }
        }
        let service = Service()
        let articles = try await service.fetchArticles().first().values.first(where: { _ in true })
        #expect(articles == ["a", "b"])

        let number = await Future<Int, Never> { promise in Task { promise(.success(42)) } }.values.first { _ in true }
        #expect(number == 42)
    }
}

/// The bridge under races: values from another thread, the consuming task cancelled at an arbitrary
/// point. Every iteration must end and leave its subscription cancelled; nothing may be delivered twice.
@Suite struct AsyncPublisherRaceTests {
    @Test func cancellingWhileAnotherThreadSendsEndsEveryIteration() async {
        for round in 0..<100 {
            let upstream = DrivenPublisher<Int, Never>()
            let received = TestBox<[Int]>([])
            let task = Task {
                for await value in upstream.values { received.update { $0.append(value) } }
            }
            while upstream.subscribeCount == 0 { await Task.yield() }
            let sender = Task.detached {
                for value in 0..<50 where !upstream.subscription.isCancelled {
                    upstream.send(value)
                    if value == round % 50 { task.cancel() }
                    await Task.yield()
                }
            }
            await task.value
            await sender.value
            #expect(upstream.subscription.isCancelled)
            // Values sent while no next() waited were never asked for and are dropped; the others
            // arrive once each, in order.
            let values = received.value
            #expect(zip(values, values.dropFirst()).allSatisfy { $0 < $1 }, "round \(round): \(values)")
        }
    }
}
