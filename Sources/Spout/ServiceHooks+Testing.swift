import Dispatch
import Sequences

/// Places where tests observe the service from inside.
///
/// **Thread safety:** immutable; the closures are called from event loops.
package struct ServiceHooks: Sendable {
    /// Called for each sequence stream; the probe it returns watches that stream's producer.
    package var makeSequenceProbe: (@Sendable (SequenceKind) -> SequenceProbe?)?
    /// Called on the worker thread that is about to reach a costly `start` (kind, start), before the work.
    package var willReachStart: (@Sendable (SequenceKind, Int) -> Void)?
    /// How often the TLS certificate and key files are checked for a change (``TLSFileWatcher``): 10 s, shorter
    /// in tests.
    package var tlsFileCheckInterval: Duration

    package init(
        makeSequenceProbe: (@Sendable (SequenceKind) -> SequenceProbe?)? = nil,
        willReachStart: (@Sendable (SequenceKind, Int) -> Void)? = nil,
        tlsFileCheckInterval: Duration = .seconds(10)
    ) {
        self.makeSequenceProbe = makeSequenceProbe
        self.willReachStart = willReachStart
        self.tlsFileCheckInterval = tlsFileCheckInterval
    }
}

extension ServiceHooks {
    /// Where the service runs costly sequence work: the worker queue, after ``willReachStart`` when set. Decided
    /// once, when the service starts, so the request path does not look at the hook.
    var sequenceWorker: SequenceWorker {
        guard let willReachStart else { return .queue }
        return SequenceWorker { kind, start, work in
            SequencePreparation.queue.async {
                willReachStart(kind, start)
                work()
            }
        }
    }

    /// The service's kept JSON documents: none when probes watch the producers, since a kept document is
    /// answered without producing a term.
    var smallDocuments: SmallDocuments {
        SmallDocuments(capacity: makeSequenceProbe == nil ? 128 : 0)
    }
}
