extension Publisher {
    /// Publishes elements up to the specified maximum count, then finishes.
    ///
    /// When the last allowed element arrives it cancels upstream, delivers the element and
    /// finishes. Demand passes straight through to upstream.
    ///
    ///     let cancellable = (1...10).publisher
    ///         .prefix(2)
    ///         .sink { print($0) }
    ///     // Prints: 1 2 (one per line)
    ///
    /// - Parameter maxLength: The maximum number of elements to republish; must not be negative.
    /// - Returns: A publisher that publishes up to the first `maxLength` elements.
    public func prefix(_ maxLength: Int) -> Publishers.Output<Self> {
        if maxLength < 0 { apiViolation("prefix length must not be negative, got \(maxLength)") }
        return output(in: 0..<maxLength)
    }

    /// Publishes a specific element, indicated by its index in the sequence of published elements.
    ///
    /// Elements before the index are dropped, each replaced by a request for one more from
    /// upstream; on the element at the index it cancels upstream, delivers it and finishes.
    ///
    ///     let cancellable = ["a", "b", "c"].publisher
    ///         .output(at: 1)
    ///         .sink { print($0) }
    ///     // Prints: b
    ///
    /// - Parameter index: The index of the element to publish; must not be negative.
    /// - Returns: A publisher that publishes a single element.
    public func output(at index: Int) -> Publishers.Output<Self> {
        if index < 0 { apiViolation("output index must not be negative, got \(index)") }
        return output(in: index..<(index == .max ? index : index + 1))
    }

    /// Publishes elements specified by their range in the sequence of published elements.
    ///
    ///     let cancellable = (0..<10).publisher
    ///         .output(in: 2...4)
    ///         .sink { print($0) }
    ///     // Prints: 2 3 4 (one per line)
    ///
    /// - Parameter range: A range of indices, none negative.
    /// - Returns: A publisher that publishes the elements within the range.
    public func output<R: RangeExpression>(in range: R) -> Publishers.Output<Self> where R.Bound == Int {
        Publishers.Output(upstream: self, range: range.relative(to: 0..<Int.max))
    }
}

extension Publishers {
    /// A publisher that publishes elements specified by a range in the sequence of published elements.
    ///
    /// **Ownership:** a value; its subscription counts the elements until the stream ends.
    ///
    /// **Thread safety:** value type; safe to subscribe from any thread.
    public struct Output<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// The range of indices of the elements to publish.
        public let range: CountableRange<Int>

        /// Creates a publisher that publishes the elements of `upstream` whose indices are in `range`.
        ///
        /// > Warning: A range with a negative lower bound is misuse of the API and traps.
        public init(upstream: Upstream, range: CountableRange<Int>) {
            if range.lowerBound < 0 { apiViolation("output range must not be negative, got \(range)") }
            self.upstream = upstream
            self.range = range
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let forwarding = OutputForwarding<Output, Failure>(range: range)
            upstream.subscribe(ForwardingInner(forwarding: forwarding, downstream: subscriber))
        }
    }
}

/// The step of `prefix(_:)` and `output(in:)`: drop before the range, send inside it, and end the
/// stream on its last index.
private struct OutputForwarding<Input, Failure: Error>: Forwarding {
    typealias Output = Input
    typealias UpstreamFailure = Failure

    var name: String { "Output" }

    let range: Range<Int>
    var index = 0

    var isExhausted: Bool { range.isEmpty }

    mutating func receive(_ input: Input) -> ForwardingStep<Input, Failure> {
        let current = index
        index &+= 1
        if current < range.lowerBound { return .drop }
        // Past the range: only an empty range gets here, when upstream sends during downstream's
        // `receive(subscription:)` (a synchronous publisher), before the exhausted check ends the stream.
        if current >= range.upperBound { return .finish }
        return current == range.upperBound - 1 ? .sendAndFinish(input) : .send(input)
    }
}
