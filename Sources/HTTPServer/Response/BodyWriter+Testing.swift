import EventLoops
extension BodyWriter {
    /// The bytes of storage the connection's outbound buffer holds and the bytes queued in it (0, 0 once the
    /// stream ended). For tests of what a stream keeps in memory.
    package var outboundStorage: (capacity: Int, queued: Int) {
        loop.preconditionInEventLoop()
        guard isOpen else { return (0, 0) }
        return connection.outboundStorage
    }
}

extension Connection {
    /// The bytes of storage the outbound buffer holds, and of them the bytes queued (for tests).
    var outboundStorage: (capacity: Int, queued: Int) { (outbound.storageCapacity, outbound.count) }
}
