import Reactive
import Sequences

extension SequencePlan {
    /// The sequence, paced by `interval` when one was asked for.
    ///
    /// Without an interval the elements flow as fast as the client reads. (Pacing lands with the
    /// time operators.)
    var pacedPublisher: AnyPublisher<Term, Never>? {
        nil
    }
}
