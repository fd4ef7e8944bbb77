import Dispatch
import EventLoops

extension Server {
    /// How many of the server's loops run their coarse timer now. Blocks on each loop's queue: for tests only,
    /// never from a loop.
    package func _tickingLoopCount() -> Int {
        contexts.reduce(0) { count, context in
            count + (context.loop.runAndWait { context.isTicking } ? 1 : 0)
        }
    }

    /// How many times a connection has held back a pipelined request until the answers before it were sent.
    /// Blocks on each loop's queue: for tests only, never from a loop.
    package func _pipelineHoldCount() -> Int {
        contexts.reduce(0) { count, context in count + context.loop.runAndWait { context.pipelineHolds } }
    }
}

extension Server {
    /// How many connections are open, the probe reserve's included. Blocks on the accept loop's queue: for tests
    /// only, never from a loop.
    package func _openConnectionCount() -> Int {
        acceptLoop.runAndWait { openConnections + openReserveConnections }
    }
}
