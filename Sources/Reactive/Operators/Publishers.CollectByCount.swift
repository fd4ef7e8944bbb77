extension Publisher {
    /// Collects up to the specified number of elements, and then emits a single array of the
    /// collection.
    ///
    /// Each unit of downstream demand is passed upstream as `count` elements. When upstream
    /// finishes, a partial last array is published; when it fails, the partial array is discarded.
    ///
    ///     let cancellable = [1, 2, 3, 4, 5].publisher
    ///         .collect(2)
    ///         .sink { print($0) }
    ///     // Prints: [1, 2] [3, 4] [5] (one per line)
    ///
    /// - Parameter count: The maximum number of received elements to buffer; must be positive.
    /// - Returns: A publisher that collects up to the specified number of elements, and then
    ///   publishes them as an array.
    public func collect(_ count: Int) -> Publishers.CollectByCount<Self> {
        Publishers.CollectByCount(upstream: self, count: count)
    }
}

extension Publishers {
    /// A publisher that buffers a maximum number of items and publishes them as arrays.
    ///
    /// **Ownership:** a value; its subscription holds the current buffer until it is published.
    ///
    /// **Thread safety:** value type; safe to subscribe from any thread.
    public struct CollectByCount<Upstream: Publisher>: Publisher {
        public typealias Output = [Upstream.Output]
        public typealias Failure = Upstream.Failure

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// The maximum number of received elements to buffer before publishing.
        public let count: Int

        /// Creates a publisher that publishes the elements of `upstream` in arrays of `count`.
        ///
        /// > Warning: A count below one is misuse of the API and traps.
        public init(upstream: Upstream, count: Int) {
            if count < 1 { apiViolation("collect count must be positive, got \(count)") }
            self.upstream = upstream
            self.count = count
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.subscribe(
                ForwardingInner(
                    forwarding: CollectByCountForwarding<Upstream.Output, Failure>(count: count),
                    downstream: subscriber
                )
            )
        }
    }
}

/// The step of `collect(_:)`: fills one buffer, each unit of downstream demand asking upstream for
/// `count` values; sends a full buffer, and a partial one when upstream finishes (not when it fails).
private struct CollectByCountForwarding<Input, Failure: Error>: Forwarding {
    typealias Output = [Input]
    typealias UpstreamFailure = Failure

    let count: Int
    var buffer: [Input] = []

    init(count: Int) {
        self.count = count
        buffer.reserveCapacity(Swift.min(count, 1024))
    }

    var name: String { "CollectByCount" }

    var demandPolicy: ForwardingDemandPolicy { .multiplied(by: count) }

    mutating func receive(_ input: Input) -> ForwardingStep<[Input], Failure> {
        buffer.append(input)
        guard buffer.count == count else { return .skip }
        let full = buffer
        buffer.removeAll(keepingCapacity: true)
        return .send(full)
    }

    mutating func outputOnFinish() -> [Input]? {
        guard !buffer.isEmpty else { return nil }
        defer { buffer = [] }
        return buffer
    }
}
