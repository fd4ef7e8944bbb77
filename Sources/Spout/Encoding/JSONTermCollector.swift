import Reactive
import Sequences

/// A subscriber that writes every term of a finite sequence into one JSON array of decimal strings,
/// `["0","1","1","2"]`, appended to a byte buffer.
///
/// It asks for everything at once, and takes the terms in batches (`BatchSubscriber`): the sequence
/// publishers then deliver the whole bounded sequence inside `subscribe`, synchronously, one call per
/// batch, with no closures or boxes per term. Not for unbounded sequences: it never cancels.
///
///     let collector = JSONTermCollector(appendingTo: Array(#"{"values":"#.utf8))
///     SequencePublisher(kind: .fibonacci, count: 4).subscribe(collector)
///     // collector.finish() == Array(#"{"values":["0","1","1","2"]"#.utf8)
///
/// **Ownership:** the caller keeps it until ``finish()``; the subscription retains it while delivering.
///
/// **Thread safety:** confined to the thread that subscribes it (the sequence publishers deliver there).
final class JSONTermCollector: BatchSubscriber, @unchecked Sendable {
    // @unchecked Sendable: audited: used only on the subscribing thread, inside `subscribe` (see above).
    typealias Input = Term
    typealias Failure = Never

    private var bytes: [UInt8]  // Confined to the subscribing thread.
    /// The length of `bytes` just after the `[`: a term written at this length is the first, without a comma.
    private let opening: Int  // Immutable.

    /// Starts the array at the end of `bytes` (a `[` is appended now).
    init(appendingTo bytes: [UInt8]) {
        self.bytes = bytes
        self.bytes.append(UInt8(ascii: "["))
        opening = self.bytes.count
    }

    func receive(subscription: any Subscription) {
        subscription.request(.unlimited)
    }

    func receive(_ input: Term) -> Subscribers.Demand {
        withBytes { Self.append(input, to: &$0, opening: opening) }
        return .none
    }

    func receive(batch: UnsafeBufferPointer<Term>) -> Subscribers.Demand {
        withBytes { buffer in
            for term in batch { Self.append(term, to: &buffer, opening: opening) }
        }
        return .none
    }

    func receive(completion: Subscribers.Completion<Never>) {}

    /// Closes the array and hands the bytes over (those given to `init` first); the collector keeps none.
    func finish() -> [UInt8] {
        var result: [UInt8] = []
        swap(&result, &bytes)
        result.append(UInt8(ascii: "]"))
        return result
    }

    /// Runs `body` on the buffer moved out of the stored property, so that appending a batch is one access to
    /// the property rather than one (checked) access per byte.
    private func withBytes(_ body: (inout [UInt8]) -> Void) {
        var buffer: [UInt8] = []
        swap(&buffer, &bytes)
        body(&buffer)
        swap(&buffer, &bytes)
    }

    private static func append(_ term: Term, to bytes: inout [UInt8], opening: Int) {
        if bytes.count > opening { bytes.append(UInt8(ascii: ",")) }
        bytes.append(UInt8(ascii: "\""))
        if let small = term.value.smallValue {
            JSONText.appendUnsigned(small, to: &bytes)
        } else {
            term.value.appendDecimal(to: &bytes)
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
