import Sequences

/// Places where tests observe the service from inside.
///
/// **Thread safety:** immutable; the closures are called from event loops.
package struct ServiceHooks: Sendable {
    /// Called for each sequence stream; the probe it returns watches that stream's producer.
    package var makeSequenceProbe: (@Sendable (SequenceKind) -> SequenceProbe?)?
    /// Called on the worker thread that is about to reach a costly `start` (kind, start), before the work.
    package var willReachStart: (@Sendable (SequenceKind, Int) -> Void)?

    package init(
        makeSequenceProbe: (@Sendable (SequenceKind) -> SequenceProbe?)? = nil,
        willReachStart: (@Sendable (SequenceKind, Int) -> Void)? = nil
    ) {
        self.makeSequenceProbe = makeSequenceProbe
        self.willReachStart = willReachStart
    }
}
