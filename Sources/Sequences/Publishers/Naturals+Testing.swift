extension Naturals {
    /// Creates a publisher whose subscriptions report to `probe`: the way in for tests in this package.
    ///
    /// - Parameters:
    ///   - start: The index of the first element to deliver; zero or more.
    ///   - count: The number of elements to deliver, zero or more; `nil` streams until cancelled.
    ///   - probe: Counters to report to.
    package init(start: Int = 0, count: Int? = nil, probe: SequenceProbe?) {
        let publisher = SequencePublisher(kind: .naturals, start: start, count: count, probe: probe)
        self.start = publisher.start
        self.count = publisher.count
        self.probe = publisher.probe
    }
}
