extension Publisher {
    /// Omits the specified number of elements before republishing subsequent elements.
    ///
    /// The first request from downstream is passed upstream increased by `count`, so that the
    /// omitted elements do not use up downstream's demand; later requests pass straight through.
    ///
    ///     let cancellable = [1, 2, 3, 4].publisher
    ///         .dropFirst(2)
    ///         .sink { print($0) }
    ///     // Prints: 3 4 (one per line)
    ///
    /// - Parameter count: The number of elements to omit; must not be negative. The default is 1.
    /// - Returns: A publisher that does not republish the first `count` elements.
    public func dropFirst(_ count: Int = 1) -> Publishers.Drop<Self> {
        Publishers.Drop(upstream: self, count: count)
    }
}

extension Publishers {
    /// A publisher that omits a specified number of elements before republishing later elements.
    ///
    /// **Ownership:** a value; its subscription counts the omitted elements until the stream ends.
    ///
    /// **Thread safety:** value type; safe to subscribe from any thread.
    public struct Drop<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// The number of elements to drop.
        public let count: Int

        /// Creates a publisher that omits the first `count` elements of `upstream`.
        ///
        /// > Warning: A negative count is misuse of the API and traps.
        public init(upstream: Upstream, count: Int) {
            if count < 0 { apiViolation("dropFirst count must not be negative, got \(count)") }
            self.upstream = upstream
            self.count = count
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let forwarding = DropForwarding<Output, Failure>(count: count, remaining: count)
            upstream.subscribe(ForwardingInner(forwarding: forwarding, downstream: subscriber))
        }
    }
}

/// The step of `dropFirst`: skips the first `count` values, which its grown first request asked for.
private struct DropForwarding<Input, Failure: Error>: Forwarding {
    typealias Output = Input
    typealias UpstreamFailure = Failure

    let count: Int
    var remaining: Int

    var name: String { "Drop" }

    var demandPolicy: ForwardingDemandPolicy { .firstRequestGrown(by: count) }

    mutating func receive(_ input: Input) -> ForwardingStep<Input, Failure> {
        guard remaining > 0 else { return .send(input) }
        remaining -= 1
        return .skip
    }
}
