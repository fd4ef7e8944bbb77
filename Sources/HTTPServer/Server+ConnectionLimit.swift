extension Server {
    /// How many connections a server keeps open at once, and why: the configured
    /// ``Configuration/maxConnections`` clamped to what the process's open-file limit can hold.
    ///
    /// Every connection takes a descriptor, and so do the server itself and everything else in the process. When
    /// the limit is reached mid-`accept`, the kernel keeps completing handshakes into the backlog while `accept`
    /// fails with `EMFILE`: clients get a connection and never a byte. So at start the server keeps at most
    /// ``openFileLimit`` − ``reservedDescriptors`` connections and answers the next one `503` with `Retry-After`.
    ///
    /// **Ownership:** A value, computed once at ``Server/start(configuration:group:handler:)``.
    ///
    /// **Thread safety:** Value type; not shared.
    public struct ConnectionLimit: Sendable, Equatable, CustomStringConvertible {
        /// ``Configuration/maxConnections`` as configured.
        public let configured: Int
        /// The soft `RLIMIT_NOFILE` at start, after it was raised to the hard limit.
        public let openFileLimit: Int
        /// Descriptors kept for everything but client connections: ``Configuration/reservedFileDescriptors``
        /// plus one epoll descriptor per event loop, at most half of ``openFileLimit``.
        public let reservedDescriptors: Int
        /// The limit in force: the smaller of ``configured`` and ``openFileLimit`` − ``reservedDescriptors``,
        /// and at least 1.
        public let effective: Int
        /// Connections accepted beyond ``effective`` on which only probe requests are served
        /// (``Configuration/probeConnectionReserve``; 0 without ``Configuration/reserveConnectionAllows``). Their
        /// descriptors are part of ``reservedDescriptors``.
        public let probeReserve: Int

        /// Computes the limit for `configured` connections under `openFileLimit` descriptors.
        /// - Parameters:
        ///   - reserved: ``Configuration/reservedFileDescriptors``; negative counts as zero.
        ///   - loopCount: The number of event loops (each holds an epoll descriptor).
        ///   - probeReserve: Connections kept beyond the limit for probes; negative counts as zero.
        public init(configured: Int, openFileLimit: Int, reserved: Int, loopCount: Int, probeReserve: Int = 0) {
            self.configured = configured
            self.openFileLimit = openFileLimit
            self.probeReserve = max(0, probeReserve)
            let own = max(0, reserved).addingReportingOverflow(max(0, loopCount))
            let wanted = own.partialValue.addingReportingOverflow(self.probeReserve)
            let sum = own.overflow || wanted.overflow ? Int.max : wanted.partialValue
            reservedDescriptors = min(sum, max(0, openFileLimit) / 2)
            effective = max(1, min(configured, max(0, openFileLimit) &- reservedDescriptors))
        }

        /// Whether ``effective`` is below ``configured``.
        public var isClamped: Bool { effective < configured }

        public var description: String {
            let probes = probeReserve > 0 ? ", \(probeReserve) more connections for probes" : ""
            let why = "open-file limit \(openFileLimit), \(reservedDescriptors) descriptors reserved\(probes)"
            if isClamped {
                return "maxConnections \(configured) clamped to \(effective) (\(why))"
            }
            return "maxConnections \(effective) (\(why))"
        }
    }
}
