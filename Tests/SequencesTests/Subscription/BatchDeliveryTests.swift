import Reactive
import Testing

@testable import Sequences

/// A batch-taking subscriber that records each batch and lets a test script its demand and cancels.
private final class BatchRecorder: BatchSubscriber {
    typealias Input = Term
    typealias Failure = Never

    var subscription: (any Subscription)?
    var batches: [[Term]] = []
    var singleValues = 0
    var completions = 0
    /// Called after each batch is recorded; returns the additional demand.
    var onBatch: (BatchRecorder, [Term]) -> Subscribers.Demand = { _, _ in .none }

    func receive(subscription: any Subscription) {
        self.subscription = subscription
    }

    func receive(batch: UnsafeBufferPointer<Term>) -> Subscribers.Demand {
        let terms = Array(batch)
        batches.append(terms)
        return onBatch(self, terms)
    }

    func receive(_ input: Term) -> Subscribers.Demand {
        singleValues += 1
        return .none
    }

    func receive(completion: Subscribers.Completion<Never>) {
        completions += 1
    }

    var indices: [Int] { batches.flatMap { $0.map(\.index) } }
}

@Suite struct BatchDeliveryTests {
    @Test func aBatchNeverExceedsTheDemandAndTermsComeInOrder() {
        let recorder = BatchRecorder()
        SequencePublisher(kind: .naturals, start: 5).subscribe(recorder)
        #expect(recorder.batches.isEmpty)
        recorder.subscription?.request(.max(3))
        #expect(recorder.batches.map(\.count) == [3])
        recorder.subscription?.request(.max(300))
        #expect(recorder.batches.allSatisfy { $0.count <= TermCursor.batchCapacity })
        #expect(recorder.indices == Array(5..<308))
        #expect(recorder.batches.flatMap { $0 }.allSatisfy { $0.value == BigUInt(UInt64($0.index)) })
        #expect(recorder.singleValues == 0)
        #expect(recorder.completions == 0)
    }

    @Test(arguments: SequenceKind.allCases)
    func batchesCarryTheSameTermsAsOneByOneDelivery(kind: SequenceKind) {
        let recorder = BatchRecorder()
        SequencePublisher(kind: kind, start: 2, count: 200).subscribe(recorder)
        recorder.subscription?.request(.unlimited)
        var expected: [Term] = []
        _ = SequencePublisher(kind: kind, start: 2, count: 200).sink { expected.append($0) }
        #expect(recorder.batches.flatMap { $0 } == expected)
        #expect(recorder.completions == 1)
    }

    @Test func demandReturnedFromABatchIsAddedAfterIt() {
        let probe = SequenceProbe()
        let recorder = BatchRecorder()
        recorder.onBatch = { recorder, _ in recorder.batches.count < 3 ? .max(2) : .none }
        Naturals(probe: probe).subscribe(recorder)
        recorder.subscription?.request(.max(4))
        // 4, then 2 after the first batch, 2 after the second, nothing after the third.
        #expect(recorder.batches.map(\.count) == [4, 2, 2])
        #expect(probe.produced == 8)
        #expect(probe.requested == .max(8))
    }

    @Test func aRequestFromInsideABatchLoopsInsteadOfRecursing() {
        let recorder = BatchRecorder()
        var depth = 0
        var maxDepth = 0
        recorder.onBatch = { recorder, _ in
            depth += 1
            maxDepth = max(maxDepth, depth)
            if recorder.batches.count < 50 { recorder.subscription?.request(.max(1)) }
            depth -= 1
            return .none
        }
        Naturals().subscribe(recorder)
        recorder.subscription?.request(.max(1))
        #expect(recorder.indices == Array(0..<50))
        #expect(maxDepth == 1)
    }

    @Test func aCancelInsideABatchStopsTheProducerBeforeTheNext() {
        let probe = SequenceProbe()
        let recorder = BatchRecorder()
        recorder.onBatch = { recorder, _ in
            recorder.subscription?.cancel()
            return .max(1_000)
        }
        Naturals(probe: probe).subscribe(recorder)
        recorder.subscription?.request(.unlimited)
        #expect(recorder.batches.count == 1)
        #expect(recorder.batches[0].count == TermCursor.batchCapacity)
        #expect(probe.produced == TermCursor.batchCapacity)
        #expect(probe.isCancelled)
        #expect(recorder.completions == 0)
        recorder.subscription?.request(.max(5))
        #expect(recorder.batches.count == 1)
    }

    @Test func finishesAfterTheLastBatch() {
        let recorder = BatchRecorder()
        Naturals(count: 130).subscribe(recorder)
        recorder.subscription?.request(.max(1_000))
        #expect(recorder.batches.map(\.count) == [TermCursor.batchCapacity, 130 - TermCursor.batchCapacity])
        #expect(recorder.completions == 1)
    }
}
