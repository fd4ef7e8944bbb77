import Dispatch
import Foundation
import HTTPServer
import Sequences
import Synchronization

/// Whether the service should receive traffic: false while starting and once draining.
///
/// **Thread safety:** safe to call from any thread (an atomic).
public final class Readiness: Sendable {
    /// The phases of the service's life, as `/ready` reports them.
    public enum Phase: Int, Sendable {
        case starting
        case ready
        case draining
    }

    private let phase = Atomic<Int>(Phase.starting.rawValue)

    public init() {}

    /// The current phase.
    public var current: Phase { Phase(rawValue: phase.load(ordering: .acquiring)) ?? .starting }

    func set(_ newPhase: Phase) {
        phase.store(newPhase.rawValue, ordering: .releasing)
    }
}
