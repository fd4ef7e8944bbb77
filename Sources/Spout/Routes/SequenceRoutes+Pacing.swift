import Dispatch
import Reactive
import Sequences

extension SequencePlan {
    /// The queue paced streams wait on; elements then hop to their connection's loop.
    private static let pacingQueue = DispatchQueue(label: "spout.pacing")

    /// `publisher` (this plan's sequence) paced by `interval`, or `nil` when none was asked for (the elements then flow
    /// as fast as the client reads, through the unerased publisher).
    ///
    /// Each element waits `interval` after the previous one: `flatMap(maxPublishers: .max(1))`
    /// asks upstream for one element at a time, and `delay` holds it on a timer. A stalled client
    /// still pauses the producer: nothing is requested while the bridge has no demand.
    func paced(_ publisher: SequencePublisher) -> AnyPublisher<Term, Never>? {
        guard let intervalMilliseconds else { return nil }
        let queue = Self.pacingQueue
        return publisher
            .flatMap(maxPublishers: .max(1)) { term in
                Just(term).delay(for: .milliseconds(intervalMilliseconds), scheduler: queue)
            }
            .eraseToAnyPublisher()
    }
}
