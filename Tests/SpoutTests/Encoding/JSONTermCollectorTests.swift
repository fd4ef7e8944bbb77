import Reactive
import Sequences
import Testing

@testable import Spout

@Suite struct JSONTermCollectorTests {
    /// The terms as a JSON array of decimal strings, built from the values' descriptions.
    private func reference(_ kind: SequenceKind, start: Int, count: Int) -> String {
        var values: [String] = []
        let cancellable = SequencePublisher(kind: kind, start: start, count: count).sink { term in
            values.append("\"\(term.value)\"")
        }
        cancellable.cancel()
        return "[" + values.joined(separator: ",") + "]"
    }

    @Test(
        arguments: [
            (SequenceKind.fibonacci, 0, 10), (.fibonacci, 85, 10), (.fibonacci, 0, 0), (.naturals, 5, 3),
            (.primes, 0, 600), (.factorial, 0, 40), (.factorial, 19, 3), (.naturals, Int.max - 1, 5),
        ] as [(SequenceKind, Int, Int)]
    )
    func collectsEveryTermSynchronouslyAfterThePrefix(kind: SequenceKind, start: Int, count: Int) {
        let collector = JSONTermCollector(appendingTo: Array(#"{"values":"#.utf8))
        SequencePublisher(kind: kind, start: start, count: count).subscribe(collector)
        let text = String(decoding: collector.finish(), as: UTF8.self)
        #expect(text == #"{"values":"# + reference(kind, start: start, count: count))
    }

    @Test func asksForEverythingOnceAndTheProbeSeesTheWholeSequence() {
        let probe = SequenceProbe()
        let collector = JSONTermCollector(appendingTo: [])
        SequencePublisher(kind: .fibonacci, start: 3, count: 4, probe: probe).subscribe(collector)
        #expect(probe.requested == .unlimited)
        #expect(probe.produced == 4)
        #expect(probe.isFinished)
        #expect(String(decoding: collector.finish(), as: UTF8.self) == #"["2","3","5","8"]"#)
    }

    @Test func termsDeliveredOneByOneAreWrittenTheSameWay() {
        let collector = JSONTermCollector(appendingTo: [])
        _ = collector.receive(Term(index: 0, value: 7))
        _ = collector.receive(Term(index: 1, value: BigUInt(UInt64.max)))
        #expect(String(decoding: collector.finish(), as: UTF8.self) == "[\"7\",\"\(UInt64.max)\"]")
    }
}
