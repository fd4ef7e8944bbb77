extension SingleSequencePublisher {
    /// Creates a publisher whose subscriptions report to `probe`: the way in for tests in this package.
    ///
    /// - Parameters:
    ///   - start: The index of the first element to deliver; zero or more.
    ///   - count: The number of elements to deliver, zero or more; `nil` streams until cancelled.
    ///   - probe: Counters to report to.
    package init(start: Int = 0, count: Int? = nil, probe: SequenceProbe?) {
        self.init(wrapping: SequencePublisher(kind: Self.kind, start: start, count: count, probe: probe))
    }
}
