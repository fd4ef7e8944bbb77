extension Publisher {
    /// Raises a fatal error when its upstream publisher fails, and otherwise republishes all
    /// received input.
    ///
    ///     let cancellable = Just(1).setFailureType(to: URLError.self)
    ///         .assertNoFailure()
    ///         .sink { print($0) }
    ///     // Prints: 1
    ///
    /// - Parameters:
    ///   - prefix: A string put at the start of the fatal error message.
    ///   - file: The file name to use in the error message.
    ///   - line: The line number to use in the error message.
    /// - Returns: A publisher that raises a fatal error when its upstream publisher fails.
    public func assertNoFailure(
        _ prefix: String = "",
        file: StaticString = #file,
        line: UInt = #line
    ) -> Publishers.AssertNoFailure<Self> {
        Publishers.AssertNoFailure(upstream: self, prefix: prefix, file: file, line: line)
    }
}

extension Publishers {
    /// A publisher that raises a fatal error upon receiving any failure, and otherwise republishes
    /// all received input.
    ///
    /// **Ownership:** a value; adds nothing to the chain but the check.
    ///
    /// **Thread safety:** value type; safe to subscribe from any thread.
    public struct AssertNoFailure<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Never

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// The string put at the start of the fatal error message.
        public let prefix: String

        /// The file name used in the error message.
        public let file: StaticString

        /// The line number used in the error message.
        public let line: UInt

        /// Creates a publisher that traps if `upstream` fails.
        public init(upstream: Upstream, prefix: String, file: StaticString, line: UInt) {
            self.upstream = upstream
            self.prefix = prefix
            self.file = file
            self.line = line
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.subscribe(Inner(downstream: subscriber, prefix: prefix, file: file, line: line))
        }
    }
}

extension Publishers.AssertNoFailure {
    // A value type that hands upstream's subscription straight to downstream.
    private struct Inner<Downstream: Subscriber>: Subscriber, CustomStringConvertible
    where Downstream.Input == Output, Downstream.Failure == Never {
        typealias Input = Upstream.Output
        typealias Failure = Upstream.Failure

        let combineIdentifier = CombineIdentifier()
        let downstream: Downstream
        let prefix: String
        let file: StaticString
        let line: UInt

        var description: String { "AssertNoFailure" }

        func receive(subscription: any Subscription) {
            downstream.receive(subscription: subscription)
        }

        func receive(_ input: Input) -> Subscribers.Demand {
            downstream.receive(input)
        }

        func receive(completion: Subscribers.Completion<Failure>) {
            switch completion {
            case .finished:
                downstream.receive(completion: .finished)
            case .failure(let error):
                let lead = prefix.isEmpty ? "" : "\(prefix): "
                fatalError("\(lead)\(error)", file: file, line: line)
            }
        }
    }
}
