import Dispatch
import Glibc

/// A fixed set of ``EventLoop``s, by default one per processor core; connections are spread round-robin.
///
/// **Ownership:** Retained by whoever creates it (HTTPServer's `Server` creates its own when given none); the
/// loops live as long as the group.
///
/// **Thread safety:** Immutable; safe to use from any thread.
public final class EventLoopGroup: Sendable {
    /// The loops, in a fixed order. // Immutable.
    public let loops: [EventLoop]

    /// Creates `loopCount` loops (default: one per online processor).
    public init(loopCount: Int = EventLoopGroup.defaultLoopCount) {
        let count = max(1, loopCount)
        loops = (0..<count).map { EventLoop(label: "spout.loop.\($0)") }
    }

    /// One loop per online processor.
    public static var defaultLoopCount: Int { SystemEnvironment.processorCount }
}
